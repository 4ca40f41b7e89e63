"""What the owner records in a plan: beneficiaries, guardians, assets, messages."""
