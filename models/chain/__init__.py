"""On-chain rows: the relayed transactions and the owner's claims view. Who may sign what and
what a confirmed call means for the plan are flows (models.flows.onchain, models.flows.effects).
"""
