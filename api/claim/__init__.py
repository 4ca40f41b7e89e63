"""The heir's side: /api/claim/{token} and the routes under it."""
