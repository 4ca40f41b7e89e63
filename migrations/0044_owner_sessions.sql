-- The owner's own pages (/plan, /sign-in): a browser signed in holds an opaque id in a cookie,
-- never a JWT; the session is this row, found by the id's SHA-256 (the id itself is kept
-- nowhere). It is valid only while the account's session generation is the one it was opened
-- under (sign out everywhere, removing a wallet and deleting the account raise it), until
-- `expires_at` (at most JWT_TTL_SECONDS after sign-in) and while it is not idle longer than
-- SESSION_IDLE_SECONDS past `last_seen_at`. docs/security.md, "The owner's page session".
--
-- An owner's passkeys (WebAuthn, discoverable): of each only what checks its assertions is
-- kept, as for guardians. A session a passkey opened goes with that passkey.
CREATE TABLE IF NOT EXISTS owner_passkeys (
    credential_id bytea PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    public_key    bytea NOT NULL,
    sign_count    bigint NOT NULL DEFAULT 0 CHECK (sign_count >= 0),
    transports    text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_used_at  timestamptz
);
CREATE INDEX IF NOT EXISTS owner_passkeys_user_idx ON owner_passkeys (user_id);

CREATE TABLE IF NOT EXISTS owner_sessions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    digest        bytea NOT NULL UNIQUE,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    generation    integer NOT NULL CHECK (generation >= 0),
    passkey_id    bytea REFERENCES owner_passkeys (credential_id) ON DELETE CASCADE,
    form_token    text NOT NULL,
    created_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS owner_sessions_user_idx ON owner_sessions (user_id);
CREATE INDEX IF NOT EXISTS owner_sessions_expires_idx ON owner_sessions (expires_at);
