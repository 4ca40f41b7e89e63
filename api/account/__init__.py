"""Sign-in, sessions and the account: /api/auth/*, /api/users/me."""
