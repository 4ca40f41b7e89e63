-- "I don't know this person" (docs/security.md, "Nobody's mail relay"): an address that asked,
-- from an invitation or a confirmation request, for no more email from one account. Kept by the
-- keyed blind index of the address the email went to (outbox.sent_to_bidx), never the address;
-- checked when a row is written and again when it is sent. It goes with the account.
CREATE TABLE IF NOT EXISTS email_suppressions (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email_bidx bytea NOT NULL,
    outbox_id  uuid,  -- the email whose link was used (no reference: the outbox row may go first)
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, email_bidx)
);
