-- #26: each guardian's own page, <PUBLIC_BASE_URL>/guardian/<token>. The token is an HMAC of
-- (guardian id, page_version) under a key-ring subkey, made when an email is rendered (so every
-- email carries the same link); only its SHA-256 digest is kept, with the id of the key it was
-- made under. A new email address or wallet bumps page_version and clears the digest: the old
-- link opens nothing, the next email carries the new one.
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS page_version integer NOT NULL DEFAULT 1;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS page_key_id text;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS page_token_digest bytea;
CREATE UNIQUE INDEX IF NOT EXISTS guardians_page_token_digest ON guardians (page_token_digest)
    WHERE page_token_digest IS NOT NULL;
