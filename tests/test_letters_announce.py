"""Letters announce themselves (#28): a letter that opens after the release (on a date, or days
after it) emails each of its heirs once, with their own link, within one scan of its moment.
HTTP, the real worker (the lifecycle cron) and the email capture server; the clock moves."""

from __future__ import annotations

import re
from datetime import timedelta

from tests.helpers import sign_in
from tests.lifecycle_helpers import activate_plan, approve_plan, get_overview
from tests.plan_helpers import create, query

LINK_RE = re.compile(r"/claim/([0-9a-f]{64})")


def letters_to(email_provider, address: str) -> list[dict]:
    return [r.body for r in email_provider.to(address) if "opened today" in r.body["subject"]]


async def test_a_letter_opening_after_the_release_emails_its_heirs_once(
    client, clock, run_worker, email_provider, settings
):
    owner = await sign_in(client)
    setup = await activate_plan(client, owner)
    heir0, heir1 = setup.beneficiaries
    later = (clock.now() + timedelta(days=10)).date().isoformat()
    earlier = (clock.now() - timedelta(days=10)).date().isoformat()

    async def letter(rule: dict, audience: dict, content: str) -> dict:
        return await create(client, owner, "messages", content=content, releaseRule=rule, audience=audience)

    everyone = {"all": True}
    await letter({"kind": "on_release", "value": None}, everyone, "Now")  # opens at the release
    await letter({"kind": "on_date", "value": earlier}, everyone, "Long ago")  # also at the release
    await letter({"kind": "after_release", "value": 2}, everyone, "In two days")
    await letter({"kind": "on_date", "value": later}, {"beneficiaryIds": [heir1["id"]]}, "Birthday")
    await letter({"kind": "on_date", "value": later}, {"beneficiaryIds": [heir1["id"]]}, "Birthday, too")
    await approve_plan(client, setup)
    clock.advance(seconds=setup.overview["settings"]["cancelWindowSeconds"] + 1)
    await run_worker(settings=email_provider.settings)
    assert (await get_overview(client, owner))["status"] == "Released"
    # Only the two letters still to open are waiting to announce themselves.
    assert len(query(settings, "SELECT message_id FROM letter_openings WHERE announced_at IS NULL")) == 3
    assert letters_to(email_provider, "heir0@example.org") == []

    # Two days on: one email to each heir, with their own link, naming no letter.
    clock.advance(days=2, seconds=1)
    await run_worker(settings=email_provider.settings)
    for heir, address in ((heir0, "heir0@example.org"), (heir1, "heir1@example.org")):
        [mail] = letters_to(email_provider, address)
        assert mail["subject"] == "A letter from Olive Owner opened today"
        assert LINK_RE.findall(mail["text"]) == [heir["claimToken"]]
        assert "In two days" not in mail["text"] and "In two days" not in mail["html"]
    # Another scan sends nothing more.
    await run_worker(settings=email_provider.settings)
    assert len(letters_to(email_provider, "heir0@example.org")) == 1

    # The birthday: heir1 only, once, for both letters that open that day.
    clock.advance(days=8)
    await run_worker(settings=email_provider.settings)
    assert len(letters_to(email_provider, "heir0@example.org")) == 1
    birthday = letters_to(email_provider, "heir1@example.org")[1:]
    assert [m["subject"] for m in birthday] == ["2 letters from Olive Owner opened today"]
    await run_worker(settings=email_provider.settings)
    assert len(letters_to(email_provider, "heir1@example.org")) == 2
    # The owner's timeline says which letters reached their heirs (no title, no content).
    entries = query(
        settings, "SELECT entity_type, metadata FROM activity WHERE kind = 'message.opened_to_heirs'"
    )
    assert sorted(e["metadata"]["beneficiaries"] for e in entries) == [1, 1, 2]
    assert all(e["entity_type"] == "message" for e in entries)
    # And the heir's capsule shows them open.
    capsule = await (await client.get(f"/api/claim/{heir1['claimToken']}")).json()
    assert {m["content"] for m in capsule["messages"]} >= {"Birthday", "Birthday, too", "In two days"}


async def test_the_due_letters_are_found_by_index(settings, client):
    """The scan reads the partial index of letters not yet announced, never the messages."""
    import psycopg2

    with psycopg2.connect(settings.database_url) as conn, conn.cursor() as cur:
        cur.execute("SET enable_seqscan = off")
        cur.execute(
            "EXPLAIN SELECT message_id FROM letter_openings WHERE announced_at IS NULL AND opens_at <= now()"
            " ORDER BY opens_at LIMIT 200"
        )
        plan = "\n".join(row[0] for row in cur.fetchall())
    conn.close()
    assert "letter_openings_due_idx" in plan and "messages" not in plan
