"""The environment of a service process a test starts (`python -m service.cli worker` or
`serve`): the test's own settings and key ring, and nothing the developer's shell exported.

Shared by the worker-kill tests and the library seams' API process: each must start the
process exactly as the test's in-process app is configured.
"""

from __future__ import annotations

import os

from core.files.crypto import KeyRing
from core.settings import FIELDS, Settings


def worker_env(settings: Settings, keys: str) -> dict[str, str]:
    """The environment that makes a worker process use exactly these settings."""
    env = dict(os.environ)
    for attr, _kind, var in FIELDS:
        env.pop(var.name, None)
        value = getattr(settings, attr)
        if isinstance(value, KeyRing):
            env[var.name] = keys
        elif value is not None and value != "":
            env[var.name] = str(value)
    return env
