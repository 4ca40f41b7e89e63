"""The guardian's side: plans where one of the signed-in account's wallets is a guardian.

A guardian account sees only those plans (any other plan id is 404, like a missing one) and
nothing of their contents, Drafts included: that is where an invitation is answered. Once it
has accepted, it can report that the owner has died or cannot act, and approve a release by
signing a single-use attestation with the guardian wallet the owner recorded; before, both
are 403. Once the plan is released or ready, it helps the heirs. Decisions: docs/lifecycle.md.

- `membership`: which guardian row of a plan the caller is, and the 404/403/409 gates.
- `invitation`: the guardian's list of plans, accepting or declining.
- `reconfirmation`: the yearly "still there?" ask and its answer.
- The report, the attestation and the approval (and its threshold) move the release path:
  models.flows.verification; the guardian's page is models.flows.guardian_pages.
- `heirs`: after release, an heir's link sent again and a lost wallet's replacement approved.
- `address_changes`: a corrected heir address (proposed, agreed, held, stopped, confirmed, or
  ended when its confirmation link reached nobody);
  `open_addresses`: those still running, as guardians read them; `address_suggestions`: before
  the release, a guardian's suggestion to the owner from their page (no heir named by id).
"""
