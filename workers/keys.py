"""Key rotation housekeeping outside the archive: claim tokens and private texts sealed at rest.

Archive data keys are re-wrapped by `workers.archive.rewrap_archive_keys`; these jobs do the
same for beneficiaries' claim tokens and for message and archive texts (models/sealed_text.py),
so that after a rotation nothing needs the old key. The texts' job also seals the plaintext
rows written before migration 0012 left behind, which is why it runs at startup too.
"""

from __future__ import annotations

import logging
from typing import Any

from models import sealed_text
from models.contents import beneficiaries
from workers import context

log = logging.getLogger(__name__)


async def reseal_claim_tokens(ctx: dict[str, Any]) -> int:
    app = context.get(ctx)
    keys = app.key_ring
    resealed, unopenable = await beneficiaries.reseal_claim_tokens(app.db, keys)
    if resealed:
        log.info("claim tokens re-sealed", extra={"count": resealed, "keyId": keys.primary_id})
    if unopenable:
        # Sealed under a key no longer in the ring: those capsule links still work (the lookup
        # uses the digest), but the owner can no longer be shown them; rotating issues new ones.
        log.error("claim tokens sealed under an unknown key", extra={"count": unopenable})
    return resealed


async def reseal_private_texts(ctx: dict[str, Any]) -> int:
    app = context.get(ctx)
    keys = app.key_ring
    resealed, unopenable = await sealed_text.reseal(app.db, keys)
    if resealed:
        log.info(
            "private texts sealed under the primary key", extra={"count": resealed, "keyId": keys.primary_id}
        )
    if unopenable:
        # Never cleared or overwritten: restore the retired key to the ring and run this again.
        log.error("private texts sealed under an unknown key or tampered with", extra={"count": unopenable})
    return resealed
