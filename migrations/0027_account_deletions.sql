-- Account deletion (#27, docs/security.md "Deleting an account"): the ledger of deletions under
-- way. A row holds ids and times only, no personal data: which account (an opaque id), when it
-- was asked, and the goodbye emails to its guardians that must settle before the rows go. The
-- worker's last transaction deletes the account (every table cascades from users) and this row;
-- a crash before it leaves the row for the sweeper, one after it leaves only object keys in
-- archive_deletions, which the archive sweeper retries until storage has removed them.
CREATE TABLE account_deletions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL UNIQUE,  -- no foreign key: the row is removed with the account
    requested_at timestamptz NOT NULL,
    emails       uuid[] NOT NULL DEFAULT '{}',
    attempts     integer NOT NULL DEFAULT 0
);
