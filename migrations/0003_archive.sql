-- The encrypted archive: item rows, upload staging, audiences, object deletions, message media.
-- See docs/archive.md for the lifecycle (pending -> available | failed) and the sweeper.

CREATE TABLE archive_items (
    id             uuid PRIMARY KEY,                  -- minted by the API before staging starts
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title          text NOT NULL,
    type           text NOT NULL CHECK (type IN ('document', 'photo', 'video', 'voice', 'other')),
    category       text NOT NULL CHECK (category IN ('legal', 'financial', 'medical', 'insurance',
                                                     'property', 'digital_accounts', 'personal', 'other')),
    description    text,
    file_name      text NOT NULL,                     -- sanitised client file name
    content_type   text NOT NULL,                     -- as uploaded, normalised
    size_bytes     bigint NOT NULL CHECK (size_bytes > 0),         -- plaintext size
    staged_chunks  integer NOT NULL CHECK (staged_chunks > 0),     -- rows in archive_staging
    audience_all   boolean NOT NULL,                  -- false: the rows of archive_item_audience
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'available', 'failed')),
    failure_reason text,                              -- shown to the owner: never secrets
    attempts       integer NOT NULL DEFAULT 0,        -- encryption attempts, across re-enqueues
    -- Set by the worker when the ciphertext is stored (envelope encryption, docs/archive.md).
    storage_key    text,
    key_id         text,                              -- ENCRYPTION_KEYS id that wrapped the data key
    wrapped_key    bytea,
    stored_bytes   bigint,                            -- ciphertext size
    sha256         bytea CHECK (length(sha256) = 32), -- of the plaintext
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    stored_at      timestamptz,
    CHECK (status <> 'available' OR (storage_key IS NOT NULL AND key_id IS NOT NULL
                                     AND wrapped_key IS NOT NULL AND sha256 IS NOT NULL))
);
CREATE INDEX archive_items_user_page_idx ON archive_items (user_id, created_at DESC, id DESC);
CREATE INDEX archive_items_pending_idx ON archive_items (updated_at) WHERE status = 'pending';

-- Upload bytes waiting for the worker, in ~1 MiB chunks that any worker host can read.
-- No foreign key: chunks are written (autocommit, one at a time) before the item row exists,
-- so a slow upload never holds a transaction or a pooled connection. Chunks whose item never
-- appeared (aborted upload) are removed by the sweeper after a grace period.
CREATE TABLE archive_staging (
    item_id    uuid NOT NULL,
    seq        integer NOT NULL,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (item_id, seq)
);
-- Out of line and uncompressed: uploads are mostly compressed formats already, and pglz
-- would only burn CPU on the way in.
ALTER TABLE archive_staging ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE archive_item_audience (
    item_id        uuid NOT NULL REFERENCES archive_items (id) ON DELETE CASCADE,
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, beneficiary_id)
);
CREATE INDEX archive_item_audience_beneficiary_idx ON archive_item_audience (beneficiary_id);

-- Objects whose row is gone but whose removal from storage has not succeeded yet; the API
-- tries at once, the sweeper retries until storage answers.
CREATE TABLE archive_deletions (
    storage_key     text PRIMARY KEY,
    attempts        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_attempt_at timestamptz
);

-- A message's media is an archive item. NO ACTION (checked at the end of the statement):
-- deleting an attached item is refused (the API answers 409 and names the messages), while
-- deleting an account still cascades through both tables.
ALTER TABLE messages
    ADD CONSTRAINT messages_media_id_fkey FOREIGN KEY (media_id) REFERENCES archive_items (id);
CREATE INDEX messages_media_idx ON messages (media_id) WHERE media_id IS NOT NULL;
