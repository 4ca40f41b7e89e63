"""The emails' words, by audience (models.mail.emails.render is the one entry point).

- `owner`: the owner's emails (`account`: the digest of changes to their account, and their
  address changed); `guardian`: the guardians'; `heir`: the heirs'; `heir_news`: an
  heir's link sent early, and their request to check with its answer.
- `objections`: a guardian's objection and its withdrawal (to the owner and the guardians), and
  the deadline as every verification email to guardians states it.
- `address_changes`, `address_suggestions`: an heir's address corrected by the guardians, or
  suggested to the owner.
- `common`: what they share (the declaration `Kind`, sentences as markup, times in words, the
  owner's name, stand-ins opening a sentence).

Each module's KINDS declares its outbox kinds (common.Kind): the words, (row, links) -> (subject,
body) as markup, the audience, the links and the footers.
"""
