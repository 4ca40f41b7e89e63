"""Accounts: users and their wallets, wallet sign-in."""
