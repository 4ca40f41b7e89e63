"""The emails' words, by audience (models.mail.emails.render is the one entry point).

- `owner`: the owner's emails; `guardian`: the guardians'; `heir`: the heirs'; `heir_news`: an
  heir's link sent early, and their request to check with its answer.
- `objections`: a guardian's objection and its withdrawal (to the owner and the guardians), and
  the deadline as every verification email to guardians states it.
- `common`: what they share (times in words, the owner's name, the on-chain release in words).

Each module's TEMPLATES maps an outbox kind to its template: (row, links) -> (subject, text).
"""
