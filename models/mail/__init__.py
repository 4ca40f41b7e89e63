"""Emails as sent: an outbox row rendered at send time with its links and its words (each
kind declared in texts/, by audience; its words in templates/kinds/). Above the rooms whose
records it reads (the rows themselves: models.delivery).
"""
