"""Email delivery: the outbox rows written with their events, and recording them at send time
(rendering them: models.mail).
"""
