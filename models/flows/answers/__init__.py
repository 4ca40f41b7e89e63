"""The answers people give from their pages, each asked as a request, proved through
models.proofs and run by the function behind the JSON route: `guardian` (a guardian's page),
`objections` (a guardian's objection and its withdrawal, from the page or the JSON route)."""
