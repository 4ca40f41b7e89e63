"""The owner's pages of the plan's rules and what follows from them: the settings in words,
activation and deactivation, the rehearsal of an heir's page, the timeline, and the data's way
out. docs/pages.md, "The plan's rules from a browser"."""
