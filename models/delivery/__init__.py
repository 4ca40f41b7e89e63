"""Email delivery: the outbox rows written with their events, and rendering and recording them at
send time.
"""
