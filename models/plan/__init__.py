"""The plan and its lifecycle: states and transitions, settings, the scheduler's due scan, the
owner's overview and journey; the guardian's side in the guardianships/ room.
"""
