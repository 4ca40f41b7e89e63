"""The emails' kinds, by audience (models.mail.emails.render is the one entry point).

- `owner`: the owner's emails (`account`: the digest of changes to their account, and their
  address changed); `guardian`: the guardians'; `heir`: the heirs'; `heir_news`: an
  heir's link sent early, and their request to check with its answer.
- `objections`, `objection_lapses`: a guardian's objection, its withdrawal and its lapse (to the
  owner and the guardians).
- `address_changes`, `address_suggestions`: an heir's address corrected by the guardians, or
  suggested to the owner.
- `common`: what they share (the declaration `Kind`, the emails' Jinja environment, the owner's
  name, stand-ins opening a sentence).

Each module's KINDS declares its outbox kinds (common.Kind): the template of the words
(models/mail/templates/kinds/<kind>.html, which sets the subject and the body), the audience,
the links and the footers.
"""
