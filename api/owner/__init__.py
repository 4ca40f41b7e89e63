"""The owner's own pages: sign-in and the session (`session`, `sign_in`, `dev_owner`), the
account (`account`), and the plan's pages (`/plan`, heirs, guardians; the form recipe, `forms`).
Server-rendered like the heirs' and guardians' pages, signed in by a cookie. docs/pages.md,
"The owner's pages".
"""
