"""Stellar ecosystem standards the service speaks to wallets: SEP-1 stellar.toml, SEP-7 requests."""
