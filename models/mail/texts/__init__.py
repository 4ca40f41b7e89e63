"""The emails' words, by audience (models.mail.emails.render is the one entry point).

- `owner`: the owner's emails; `guardian`: the guardians'; `heir`: the heirs'.
- `common`: what they share (times in words, the owner's name, the on-chain release in words).

Each module's TEMPLATES maps an outbox kind to its template: (row, links) -> (subject, text).
"""
