"""An outbox row as the worker sends it: the row with what its template needs, read in one
statement (the recipient's address and name, the owner's name and wallet, the claim token, the
check-in and guardian-page link state, the heir or guardian it is about, an heir's note), the
sealed texts opened.

models.delivery.outbox (the one writer of `outbox`) claims rows with this read; the outbox
benchmark renders the worker's very requests with `load`. It changes with what the emails say
(models.mail.emails), not with how rows are queued, claimed and recorded.
"""

from __future__ import annotations

from typing import Any, TypedDict

from core.db import Pool, autocommit
from core.files.crypto import KeyRing
from models import address_links, plans, sealed_text
from models.common import live_account
from models.delivery.budget import answered, own_address_bidx, recipient_bidx, suppressed

# The one email an account being deleted still sends: each accepted guardian's goodbye
# (models.flows.deletion), rendered from rows that stay until it is settled.
GOODBYE = "plan_deleted"


class Delivery(TypedDict):
    """A pending outbox row with what its template needs, read in one statement."""

    id: str
    kind: str
    attempts: int
    context: dict[str, Any]
    recipient_type: str
    address: str | None
    recipient_name: str | None
    # The recipient's language and zone (docs/translations.md): the owner's, the heir's (also for
    # an email to an address proposed for them or awaiting confirmation) or the guardian's. None:
    # English, UTC.
    locale: str | None
    time_zone: str | None
    # How to refer to the recipient and to the plan's owner where a language marks grammatical
    # gender (core.text.gender.GENDERS; None: not said, the words need none).
    recipient_gender: str | None
    owner_gender: str | None
    owner_name: str | None
    owner_wallet: str | None
    beneficiary_id: str | None
    claim_token_sealed: str | None
    check_in_link: bool  # the email carries a check-in link that no check-in has ended yet
    check_in_key_id: str | None  # the key its token was first rendered under (None: not yet)
    about_guardian_name: str | None  # the guardian an email to the owner is about (a refusal)
    subject_name: str | None  # the heir a guardian's email is about (context beneficiaryId)
    # A guardian recipient's page link (models.guardian_links): its version and the key its
    # token was first rendered under (None: not yet).
    guardian_id: str | None
    guardian_page_version: int | None
    guardian_page_key_id: str | None
    # A guardian recipient with no wallet recorded: they answer with a passkey, and their emails
    # never speak of a wallet (docs/pages.md, "Each sentence knows its reader").
    guardian_passkey: bool
    request_note: str | None  # an heir's note with their request to verify (context requestId)
    # Why a guardian reported, if one said (plans.REPORT_REASONS): the words follow it.
    report_reason: str | None
    # The bounce alert's plan has too few accepted guardians to correct an heir's address.
    short_of_guardians: bool
    # The recipient told this account "I don't know this person" (models.delivery.suppressions)
    # and has not accepted or confirmed since (then nothing stops their emails).
    suppressed: bool
    # The account is being deleted (or gone) and this is not one of its goodbyes: the links it
    # carries open nothing since the deletion's 202, so it is skipped.
    account_gone: bool
    # The guardian accepted, or the heir confirmed their address: their emails carry no
    # "I don't know this person" link (a mail client's Unsubscribe must not drop them).
    answered: bool


# The blind index of the recipient's address as it is now (at send): a bounce counts against
# an address only while the person still has it (migrations/0021_email_events.sql).
# A row sent to an address of its own counts against nobody's (an owner's previous one) or that
# address's (`toBidx`: a corrected heir address, whose "I don't know this person" stops it).
SENT_TO_BIDX = (
    f"CASE WHEN o.context->>'toSealed' IS NOT NULL THEN {own_address_bidx(row='o')}"
    " WHEN o.recipient_type = 'guardian' THEN (SELECT email_bidx FROM guardians WHERE id = o.recipient_id)"
    " WHEN o.recipient_type = 'beneficiary'"
    " THEN (SELECT email_bidx FROM beneficiaries WHERE id = o.recipient_id)"
    " ELSE (SELECT email_bidx FROM users WHERE id = o.recipient_id) END"
)

# Names and addresses are sealed at rest (models/sealed_text.py): `from_row` opens the recipient's
# (guardian, beneficiary or owner, whichever the row names) and the plan owner's name.
# The alerts whose words depend on whether enough guardians have accepted to correct an address.
_UNREACHED = "('claim_link_undelivered', 'address_change_undeliverable')"
_RECIPIENTS = (("g", "guardians"), ("b", "beneficiaries"), ("ru", "users"))
SELECT = (
    "SELECT o.id::text AS id, o.kind, o.attempts, o.context, o.recipient_type,"
    + "".join(
        f" {alias}.id AS {alias}_id,"
        f" {sealed_text.select_list(table=table, alias=alias, columns=('name', 'email'), prefix=alias + '_')}"
        ","
        for alias, table in _RECIPIENTS
    )
    # One of the three recipients is joined (by recipient_type): their language and zone.
    + " COALESCE(g.locale, b.locale, ru.locale) AS locale,"
    " COALESCE(g.time_zone, b.time_zone, ru.time_zone) AS time_zone, u.id AS u_id,"
    " COALESCE(g.grammatical_gender, b.grammatical_gender, ru.grammatical_gender) AS recipient_gender,"
    " u.grammatical_gender AS owner_gender,"
    f" {sealed_text.select_list(table='users', alias='u', columns=('name',), prefix='owner_')},"
    " u.wallet_address AS owner_wallet, p.report_reason, b.id AS beneficiary_id, b.claim_token_sealed,"
    # The guardians' bounce alerts (a claim link, a corrected address's confirmation) say when too
    # few of them have accepted to correct the address.
    " p.status AS plan_status, p.round_threshold, p.guardian_threshold,"
    f" CASE WHEN o.kind IN {_UNREACHED} THEN (SELECT count(*)"
    "   FILTER (WHERE ga.accepted_at IS NOT NULL) FROM guardians ga WHERE ga.user_id = p.user_id)"
    " END AS accepted_guardians,"
    f" CASE WHEN o.kind IN {_UNREACHED} THEN (SELECT count(*)"
    "   FILTER (WHERE ga.declined_at IS NULL) FROM guardians ga WHERE ga.user_id = p.user_id)"
    " END AS standing_guardians,"
    f" {suppressed(owner='p.user_id', bidx=recipient_bidx(row='o', guardian='g', heir='b'))}"
    f" AND NOT {answered(guardian='g', heir='b', row='o')} AS suppressed,"
    f" {answered(guardian='g', heir='b', row='o')} AS answered,"
    f" o.kind <> '{GOODBYE}' AND ((u.id IS NOT NULL AND NOT {live_account(alias='u')})"
    f" OR (ru.id IS NOT NULL AND NOT {live_account(alias='ru')})) AS account_gone,"
    " l.outbox_id IS NOT NULL AS check_in_link, l.key_id AS check_in_key_id,"
    " g.page_version AS guardian_page_version, g.page_key_id AS guardian_page_key_id,"
    " (g.id IS NOT NULL AND g.wallet_address IS NULL) AS guardian_passkey,"
    " ag.id AS ag_id,"
    f" {sealed_text.select_list(table='guardians', alias='ag', columns=('name',), prefix='ag_')},"
    " sb.id AS sb_id,"
    f" {sealed_text.select_list(table='beneficiaries', alias='sb', columns=('name',), prefix='sb_')},"
    f" hr.id AS hr_id, {sealed_text.select_list(table='heir_requests', alias='hr', prefix='hr_')}"
    " FROM outbox o LEFT JOIN plans p ON p.id = o.plan_id LEFT JOIN users u ON u.id = p.user_id"
    " LEFT JOIN beneficiaries sb ON sb.id = (o.context->>'beneficiaryId')::uuid"
    " LEFT JOIN guardians g ON o.recipient_type = 'guardian' AND g.id = o.recipient_id"
    " LEFT JOIN beneficiaries b ON o.recipient_type = 'beneficiary' AND b.id = o.recipient_id"
    " LEFT JOIN users ru ON o.recipient_type = 'owner' AND ru.id = o.recipient_id"
    " LEFT JOIN check_in_links l ON l.outbox_id = o.id"
    # An heir's request to verify: its note, sealed at rest, for the guardians' email.
    " LEFT JOIN heir_requests hr ON hr.id = (o.context->>'requestId')::uuid AND hr.plan_id = o.plan_id"
    # The guardian an email to the owner is about (a decline), named in its context.
    " LEFT JOIN guardians ag ON ag.id = (o.context->>'guardianId')::uuid AND ag.user_id = p.user_id"
)


# Texts an outbox row may carry sealed in its context (models.delivery.owner_notices): the names in
# an owner's digest of changes, and the owner's previous address told of a change of address.
# Sealed under "outbox" with their own uuid ("sealId") as the row id, opened only at send.
def _open_context(ring: KeyRing, context: dict[str, Any]) -> dict[str, Any]:
    def opened(sealed: str | None, seal_id: str, column: str) -> str | None:
        try:
            return sealed_text.open_text(ring, table="outbox", column=column, row_id=seal_id, sealed=sealed)
        except sealed_text.SealedTextError:  # its key retired since: the email says "someone"
            return None

    if "changes" in context:
        changes = [
            {**c, "name": opened(c.get("nameSealed"), c["sealId"], "change_name")} for c in context["changes"]
        ]
        context = {**context, "changes": changes}
    if "toSealed" in context:
        context = {**context, "to": opened(context["toSealed"], context["sealId"], "address")}
    if "proposedSealed" in context:  # a guardian's proposed heir address, told to the owner
        context = {
            **context,
            "proposed": opened(context["proposedSealed"], context["sealId"], "proposed_address"),
        }
    if "heirNameSealed" in context:  # an heir as a guardian named them to the owner, before the release
        context = {**context, "heir_name": opened(context["heirNameSealed"], context["sealId"], "heir_name")}
    if "noteSealed" in context:  # a guardian's note with their objection (models.flows.answers.objections)
        context = {**context, "note": opened(context["noteSealed"], context["sealId"], "note")}
    return context


def from_row(ring: KeyRing, *, row: dict[str, Any]) -> Delivery:
    record = sealed_text.open_row(ring, table="users", row=row, id_key="u_id", prefix="owner_")
    address = name = None
    for alias, table in _RECIPIENTS:
        opened = sealed_text.open_row(ring, table=table, row=record, id_key=f"{alias}_id", prefix=f"{alias}_")
        address = address or opened[f"{alias}_email"]
        name = name or opened[f"{alias}_name"]
    context = _open_context(ring, row["context"])
    if "toSealed" in context:  # an address the row names itself (an owner's previous one)
        address = context.get("to")
    subject = sealed_text.open_row(ring, table="beneficiaries", row=row, id_key="sb_id", prefix="sb_")
    return Delivery(
        id=row["id"],
        kind=row["kind"],
        attempts=row["attempts"],
        context=context,
        recipient_type=row["recipient_type"],
        address=address,
        recipient_name=name,
        locale=row["locale"],
        time_zone=row["time_zone"],
        recipient_gender=row["recipient_gender"],
        owner_gender=row["owner_gender"],
        owner_name=record["owner_name"],
        owner_wallet=row["owner_wallet"],
        beneficiary_id=row["beneficiary_id"],
        claim_token_sealed=row["claim_token_sealed"],
        check_in_link=row["check_in_link"],
        check_in_key_id=row["check_in_key_id"],
        about_guardian_name=sealed_text.open_row(
            ring, table="guardians", row=row, id_key="ag_id", prefix="ag_"
        )["ag_name"],
        subject_name=subject["sb_name"],
        guardian_id=None if row["g_id"] is None else str(row["g_id"]),
        guardian_page_version=row["guardian_page_version"],
        guardian_page_key_id=row["guardian_page_key_id"],
        guardian_passkey=row["guardian_passkey"],
        request_note=sealed_text.open_row(ring, table="heir_requests", row=row, id_key="hr_id", prefix="hr_")[
            "hr_note"
        ],
        report_reason=row["report_reason"],
        suppressed=row["suppressed"],
        short_of_guardians=row["accepted_guardians"] is not None
        and address_links.short_of_guardians(
            accepted=row["accepted_guardians"],
            needed=plans.threshold(
                plan={k: row[k] for k in ("round_threshold", "guardian_threshold")}
                | {"status": row["plan_status"]},
                standing=row["standing_guardians"],
            ),
        ),
        answered=bool(row["answered"]),
        account_gone=bool(row["account_gone"]),
    )


async def load(pool: Pool, ring: KeyRing, *, row_id: str) -> Delivery | None:
    """The row if it is still pending, with its recipient's address and names; None otherwise
    (read only: the benchmark renders the worker's very requests with it)."""
    async with autocommit(pool) as cur:
        await cur.execute(SELECT + " WHERE o.id = %s AND o.status = 'pending'", (row_id,))
        row = await cur.fetchone()
    return None if row is None else from_row(ring, row=row)
