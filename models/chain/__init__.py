"""On-chain calls: who may sign what, the relayed transactions, what a confirmed call means for
the plan, the owner's claims view.
"""
