"""Accounts: users and their wallets (signing in, which also checks the plan in: models.flows.auth)."""
