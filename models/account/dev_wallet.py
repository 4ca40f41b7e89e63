"""The development test owner's wallet: one Stellar keypair kept under DATA_DIR, so a newcomer
signs in from `/sign-in` with no wallet app, and comes back to the same plan next time.

Development only (the route that uses it exists only with APP_ENV=development, for a browser on
this machine). The file is mode 0600 in the 0700 data folder, like the dev secrets; deleting it
starts a new test owner. docs/pages.md, "A newcomer's first minute".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from stellar_sdk import Keypair

FILE = "test-wallet.json"


def keypair(*, data_dir: Path) -> Keypair:
    """The test wallet, made on first use."""
    path = Path(data_dir, FILE)
    if path.exists():
        return Keypair.from_secret(json.loads(path.read_text(encoding="utf-8"))["secret"])
    made = Keypair.random()
    Path(data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = Path(data_dir, f".{FILE}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"public": made.public_key, "secret": made.secret}, fh)
    partial.replace(path)
    return made
