"""Emails as sent: an outbox row rendered at send time with its links and its words (texts/, by
audience). Above the rooms whose records it reads (the rows themselves: models.delivery).
"""
