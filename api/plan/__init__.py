"""The plan: /api/legacy (overview, journey, settings, activation, check-in) and the guardians'
side, /api/legacy/guardianships.
"""
