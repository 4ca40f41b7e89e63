"""The answers people give from their pages, each asked as a request, proved through
models.proofs and run by the function behind the JSON route: `declared` (each guardian answer,
declared once), `asking` (the one check every guardian answer goes through, whatever proves it),
`acts` (what each performs once proved), `shown` (what a guardian's page shows, in sections),
`guardian` (a wallet's signing request and its callback), `passkey` (a passkey's ceremony) and
`objections` (a guardian's objection and its withdrawal, from the page or the JSON route)."""
