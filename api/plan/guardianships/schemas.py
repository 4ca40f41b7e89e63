"""What a guardian's account sees of the plans it guards, and what it sends. Each response schema
dumps the record its model returns as it is (`attribute=` names the key, `Whole` groups keys of
one record)."""

from __future__ import annotations

from marshmallow import fields, validate

from api.schemas import BaseSchema, Text, UtcDateTime, Whole
from models.plans import REPORT_REASONS


class OwnerSchema(BaseSchema):
    name = fields.String(required=True, allow_none=True, attribute="owner_name")
    walletAddress = fields.String(required=True, attribute="owner_wallet")


class LinkDeliverySchema(BaseSchema):
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True)
    status = fields.String(
        required=True,
        metadata={
            "enum": ["none", "pending", "sent", "failed", "skipped", "bounced"],
            "description": "How the latest email with their link ended (`none`: not sent yet; `bounced`: "
            "sent, but their address bounced it or marked it as spam: propose a new address with "
            "`POST /api/legacy/guardianships/{planId}/beneficiaries/{beneficiaryId}/address`).",
        },
    )
    at = UtcDateTime(
        required=True, allow_none=True, metadata={"description": "When it ended (or was queued, if pending)."}
    )


class WalletChangeSchema(BaseSchema):
    id = fields.String(required=True)
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True, metadata={"description": "The heir's name."})
    walletAddress = fields.String(
        required=True, attribute="wallet_address", metadata={"description": "The wallet they proved."}
    )
    requestedAt = UtcDateTime(required=True, attribute="requested_at")
    approvals = fields.Integer(required=True)
    approvedByMe = fields.Boolean(required=True, attribute="approved_by_me")


class WalletChangeStatusSchema(BaseSchema):
    status = fields.String(required=True, metadata={"enum": ["pending", "applied"]})
    approvals = fields.Integer(required=True)
    threshold = fields.Integer(required=True)


class OpenAddressChangeSchema(BaseSchema):
    id = fields.String(
        required=True, metadata={"description": "The change's id, for `…/address-changes/:changeId`."}
    )
    beneficiaryId = fields.String(required=True, attribute="beneficiary_id")
    name = fields.String(required=True, allow_none=True, metadata={"description": "The heir's name."})
    status = fields.String(
        required=True,
        metadata={
            "enum": ["pending", "holding", "confirming", "undeliverable"],
            "description": "`pending`: waiting for enough guardians to agree; `holding`: agreed, waiting out "
            "the hold (any guardian can stop it); `confirming`: the new address was sent a link to confirm; "
            "`undeliverable`: ended, the new address could not be reached (it bounced, or its reader said "
            "they do not know this person): nothing changed, and you may propose another (listed until "
            "one is proposed for that heir).",
        },
    )
    approvals = fields.Integer(required=True, metadata={"description": "Guardians who agreed so far."})
    holdUntil = UtcDateTime(required=True, allow_none=True, attribute="hold_until")
    proposedAt = UtcDateTime(required=True, attribute="proposed_at")
    proposedByMe = fields.Boolean(required=True, attribute="proposed_by_me")
    agreedByMe = fields.Boolean(
        required=True, attribute="agreed_by_me", metadata={"description": "Proposing counts as agreeing."}
    )


class GuardianshipSchema(BaseSchema):
    """Dumps `models.plan.guardianships.invitation.Guardianship` as it is."""

    planId = fields.String(required=True, attribute="plan_id")
    owner = Whole(OwnerSchema, required=True)
    status = fields.String(required=True)
    threshold = fields.Integer(required=True, metadata={"description": "Approvals needed."})
    approvals = fields.Integer(
        required=True, metadata={"description": "Approvals so far in this verification."}
    )
    approvedByMe = fields.Boolean(required=True, attribute="approved_by_me")
    reportedByMe = fields.Boolean(required=True, attribute="reported_by_me")
    objectedAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="objected_at",
        metadata={
            "description": "When you objected in this verification (you know the owner is alive or able "
            "to act); null: you do not object."
        },
    )
    objectionLapsesAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="objection_lapses_at",
        metadata={
            "description": "When your objection lapses unless the owner checks in first: it holds the "
            "deadline back until then (PLAN_OBJECTION_CHECK_IN_SECONDS from your first objection in this "
            "verification; objecting again does not move it). null: you do not object."
        },
    )
    releaseAt = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="release_at",
        metadata={"description": "When the owner's veto window ends."},
    )
    invitation = fields.String(
        required=True,
        validate=validate.OneOf(("pending", "accepted", "declined")),
        metadata={"description": "Your answer to the owner's invitation; you count once `accepted`."},
    )
    invitedAt = UtcDateTime(required=True, allow_none=True, attribute="invited_at")
    acceptedAt = UtcDateTime(required=True, allow_none=True, attribute="accepted_at")
    declinedAt = UtcDateTime(required=True, allow_none=True, attribute="declined_at")
    reconfirmedAt = UtcDateTime(
        required=True,
        attribute="reconfirmed_at",
        allow_none=True,
        metadata={
            "description": "When you last confirmed that you can still act as this plan's guardian "
            "(POST /api/legacy/guardianships/{planId}/reconfirm). Null if you never have, and until you "
            "accept."
        },
    )
    reconfirmationAsked = fields.Boolean(
        required=True,
        attribute="reconfirmation_asked",
        metadata={
            "description": "Whether you are asked now to confirm that you can still act as this plan's "
            "guardian (an emailed request within its grace, or one gone unanswered: `unresponsiveSince`): "
            "confirm with POST /api/legacy/guardianships/{planId}/reconfirm. False until you accept and once "
            "the plan is released."
        },
    )
    reconfirmationAskedAt = UtcDateTime(
        required=True,
        attribute="reconfirm_asked_at",
        allow_none=True,
        metadata={
            "description": "When the request to confirm was emailed, while within its grace "
            "(GUARDIAN_RECONFIRM_GRACE_SECONDS); past it, null and `unresponsiveSince` is set. Null until "
            "you accept."
        },
    )
    unresponsiveSince = UtcDateTime(
        required=True,
        attribute="unresponsive_since",
        allow_none=True,
        metadata={
            "description": "Since when a request to confirm went unanswered past its grace: the owner was "
            "told and sees it. Confirming clears it. Null otherwise, and until you accept."
        },
    )
    readySince = UtcDateTime(
        required=True,
        attribute="ready_at",
        allow_none=True,
        metadata={
            "description": "With a contract: since when the plan is ready to finalise (its beneficiaries "
            "have their links; one of them releases it on-chain)."
        },
    )
    ownerKeyUsedAt = UtcDateTime(
        required=True,
        attribute="owner_key_used_at",
        allow_none=True,
        metadata={
            "description": "When someone last signed in with the owner's wallet during this verification "
            "(the owner's timeline: `account.signed_in_during_verification`): someone holds the owner's key. "
            "Signing in does not stop the release; only an explicit check-in does. Null when nobody has "
            "since the verification started, when no verification runs (Active, Draft, Released) and "
            "until you accept."
        },
    )
    walletChanges = fields.List(
        fields.Nested(WalletChangeSchema),
        required=True,
        attribute="wallet_changes",
        metadata={
            "description": "Wallets an heir proved in place of the one bound to them (e.g. the owner "
            "recorded one they lost), waiting for `threshold` guardians to approve: only approve after "
            "confirming with the heir themselves. Empty before the plan is released or ready."
        },
    )
    addressChanges = fields.List(
        fields.Nested(OpenAddressChangeSchema),
        required=True,
        attribute="address_changes",
        metadata={
            "description": "New email addresses proposed for heirs and still running (never the address): "
            "agree with `POST …/address-changes/{id}/agree` once you know it reaches the heir, or stop it "
            "with `…/stop`; and an heir's latest whose new address could not be reached (`undeliverable`), "
            "until another is proposed. Empty before the plan is released or ready, when a proposal goes to "
            "the owner instead."
        },
    )
    beneficiaries = fields.List(
        fields.Nested(LinkDeliverySchema),
        required=True,
        metadata={
            "description": "Once the plan is released or ready: each beneficiary's claim-link email, by "
            "name (never the address or the link). Empty before."
        },
    )


class AnswerSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    invitation = fields.String(required=True, validate=validate.OneOf(("accepted", "declined")))
    status = fields.String(required=True, metadata={"description": "The plan's status."})


class ReportSchema(BaseSchema):
    reason = fields.String(
        allow_none=True,
        validate=validate.OneOf(REPORT_REASONS),
        metadata={
            "description": "Optional: why you report (`death`, `incapacity`, `unreachable`, `other`). The "
            "emails and the heirs' page choose their words by it: sympathy only when a death was reported."
        },
    )
    note = Text(
        multiline=True,
        validate=validate.Length(max=2000),
        allow_none=True,
        metadata={
            "description": "Optional words for the record; kept with the report, never in the timeline."
        },
    )


class ObjectSchema(BaseSchema):
    note = Text(
        multiline=True,
        validate=validate.Length(max=2000),
        allow_none=True,
        metadata={
            "description": "Optional: what you know. Emailed to the owner and the other accepted guardians "
            "with your name; never in the timeline."
        },
    )


class AttestationSchema(BaseSchema):
    message = fields.String(
        required=True,
        metadata={
            "description": "Text to sign with your guardian wallet: names the service, the plan, the "
            "owner's and "
            'your wallets, the words "approve the release", a 256-bit nonce and the issue time. Single use, '
            "valid 10 minutes."
        },
    )


class ApproveSchema(BaseSchema):
    signature = fields.String(
        required=True,
        validate=validate.Length(min=1, max=200),
        metadata={
            "description": "ed25519 signature of the attestation message, base64 (88 chars) or hex "
            "(128 chars), "
            "over the raw message or its SEP-53 digest, exactly as sign-in accepts."
        },
    )


class GuardianActionSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    status = fields.String(required=True, metadata={"description": "The plan's status afterwards."})


class ObjectedSchema(GuardianActionSchema):
    objectionLapsesAt = UtcDateTime(
        required=True,
        attribute="objection_lapses_at",
        metadata={
            "description": "Your objection holds the deadline back until then; if the owner has not "
            "checked in by then, it lapses and the deadline applies again."
        },
    )


class ReconfirmedSchema(BaseSchema):
    ok = fields.Boolean(required=True)
    reconfirmedAt = UtcDateTime(required=True, attribute="reconfirmed_at")
    nextAskAt = UtcDateTime(
        required=True,
        attribute="next_ask_at",
        metadata={"description": "When you will be asked again (GUARDIAN_RECONFIRM_INTERVAL_SECONDS)."},
    )


guardianship_schema = GuardianshipSchema()
answer_schema = AnswerSchema()
action_schema = GuardianActionSchema()
objected_schema = ObjectedSchema()
attestation_schema = AttestationSchema()
link_delivery_schema = LinkDeliverySchema()
reconfirmed_schema = ReconfirmedSchema()
wallet_change_status_schema = WalletChangeStatusSchema()


class AddressProposalSchema(BaseSchema):
    email = fields.Email(
        required=True,
        validate=validate.Length(max=254),
        metadata={"description": "The address you know reaches the beneficiary."},
    )


class AddressChangeSchema(BaseSchema):
    id = fields.String(required=True)
    status = fields.String(
        required=True,
        metadata={
            "enum": ["to_owner", "pending", "holding", "confirming", "applied", "stopped"],
            "description": "`to_owner`: before the release, the owner was told and decides; `pending`: "
            "waiting for enough guardians to agree; `holding`: agreed, waiting out the hold (any guardian "
            "can stop it); `stopped`: a guardian stopped it.",
        },
    )
    approvals = fields.Integer(required=True)
    threshold = fields.Integer(
        required=True, metadata={"description": "Guardians needed (0 for `to_owner`)."}
    )
    holdUntil = UtcDateTime(
        required=True,
        allow_none=True,
        attribute="hold_until",
        metadata={"description": "Holding: when the new address is asked to confirm, unless stopped first."},
    )


address_change_schema = AddressChangeSchema()
