"""Helpers the test files share, one module per subject: a test file imports them from here (or
from the older tests/*_helpers.py), never from another test file, so each file runs alone
(tests/test_layout.py checks it)."""
