"""Stellar: wallet signatures and StrKeys, the Soroban RPC gateway, checking signed envelopes."""
