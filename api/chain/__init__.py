"""On-chain calls: building and relaying contract transactions (guardians and heirs), and the
owner's claims view.
"""
