"""Key rotation housekeeping outside the archive: claim tokens sealed at rest.

Archive data keys are re-wrapped by `workers.archive.rewrap_archive_keys`; this job does the
same for beneficiaries' claim tokens, so that after a rotation nothing needs the old key.
"""

from __future__ import annotations

import logging
from typing import Any

from models import beneficiaries
from workers import context

log = logging.getLogger(__name__)


async def reseal_claim_tokens(ctx: dict[str, Any]) -> int:
    keys = context.key_ring(ctx)
    resealed, unopenable = await beneficiaries.reseal_claim_tokens(context.db(ctx), keys)
    if resealed:
        log.info("claim tokens re-sealed", extra={"count": resealed, "keyId": keys.primary_id})
    if unopenable:
        # Sealed under a key no longer in the ring: those capsule links still work (the lookup
        # uses the digest), but the owner can no longer be shown them; rotating issues new ones.
        log.error("claim tokens sealed under an unknown key", extra={"count": unopenable})
    return resealed
