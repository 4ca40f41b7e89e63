"""Ordered SQL migrations, shipped as package data so an installed copy can migrate."""
