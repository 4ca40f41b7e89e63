"""What the owner records: /api/beneficiaries, /api/guardians, /api/assets, /api/messages."""
