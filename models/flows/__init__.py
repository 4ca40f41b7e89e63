"""The flows tier: work that moves a plan through steps spanning several feature rooms (the
release path, the owner's lifecycle and the scheduler, a guardian's verification and page, an
heir's request and finished claim, on-chain effects, sign-in, account deletion, the export).
A flow may import any room and the ground; no room imports a flow (docs/conventions.md, "Floors").
"""
