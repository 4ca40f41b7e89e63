-- The API now encrypts an upload as it streams in and puts the ciphertext straight into object
-- storage; the worker only verifies it (docs/archive.md, "Why the API encrypts"). Plaintext is
-- no longer staged in PostgreSQL, where it also reached the WAL, replicas and base backups.

-- Items still pending have only staged plaintext, which nothing will encrypt any more: say so
-- honestly rather than leave them pending for ever. (Their staging goes with the table.)
UPDATE archive_items
   SET status = 'failed',
       failure_reason = 'The upload was interrupted by a service upgrade. Delete this item and upload the file again.',
       updated_at = clock_timestamp()
 WHERE status = 'pending';

DROP TABLE archive_staging;
ALTER TABLE archive_items DROP COLUMN staged_chunks;

-- From now on a row is written only after its ciphertext is stored, so every item that is not
-- failed knows where its object is, how to open it and what it should hash to.
ALTER TABLE archive_items
    ADD CONSTRAINT archive_items_sealed_check CHECK (
        status = 'failed' OR (storage_key IS NOT NULL AND key_id IS NOT NULL AND wrapped_key IS NOT NULL
                              AND stored_bytes IS NOT NULL AND sha256 IS NOT NULL));

COMMENT ON COLUMN archive_items.attempts IS 'verification attempts, across re-enqueues';
COMMENT ON COLUMN archive_items.stored_at IS 'when the API finished storing the ciphertext';
