"""How an answer is proved: one module per proof, all on one path.

Every answer a guardian or an heir gives from their page has the same shape:
- what is asked: a request kept once (models.wallet_requests: its purpose, the person
  it is for, the signer or credential that must answer, what it is bound to, when it expires);
- who answers: the identity the page resolved from its link, passed on as it is
  (models.plan.guardianships.membership `Answerer`, models.claim.capsule `Capsule`);
- how it is proved: a module here, with `issue` (what the page shows to be answered) and
  `check` (verify the answer once, use the request up once, return the evidence to keep).

Proofs today: `challenge` (a SEP-10-style challenge inside a SEP-7 request, signed by a
wallet), `contract_call` (a contract call built for a wallet, signed, checked and taken; stored
and relayed by models.flows.onchain `submit`), `message` (an ed25519 signature over a text, the
JSON approval route) and `passkey` (a WebAuthn assertion over a challenge bound to the answer).
A new way to prove an answer is one more module here; what an answer does once proved is its
declaration's (models.flows.answers.declared).
"""
