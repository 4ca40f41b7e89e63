"""The plan room: settings, the owner's overview and journey, approvals; the guardian's side in
the guardianships/ room. The plan's record and states are on the ground (models.plans); its
lifecycle, release path and scheduler are flows (models.flows).
"""
