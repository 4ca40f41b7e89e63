-- The owner's plan contents: beneficiaries, guardians, assets and messages.
-- Every row belongs to one owner (ON DELETE CASCADE) and is listed newest first by
-- (user_id, created_at DESC, id DESC), the keyset the pagination walks.

CREATE TABLE beneficiaries (
    id                    uuid PRIMARY KEY,                -- minted by the service: it binds the sealed token
    user_id               uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name                  text NOT NULL,
    relationship          text NOT NULL,
    email                 text NOT NULL,
    allocation_percentage numeric(5, 2) NOT NULL
        CHECK (allocation_percentage > 0 AND allocation_percentage <= 100),
    -- The claim token is the capsule's only key: looked up by SHA-256 digest, and kept
    -- AES-GCM sealed under the ENCRYPTION_KEYS ring so the owner can be shown it again.
    -- A database dump alone therefore opens no capsule.
    claim_token_hash      bytea NOT NULL UNIQUE CHECK (length(claim_token_hash) = 32),
    claim_token_sealed    text NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at            timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX beneficiaries_user_page_idx ON beneficiaries (user_id, created_at DESC, id DESC);

CREATE TABLE guardians (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name           text NOT NULL,
    email          text NOT NULL,
    wallet_address text NOT NULL,                     -- signs approve_guardian on-chain
    relationship   text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (user_id, wallet_address)
);
CREATE INDEX guardians_user_page_idx ON guardians (user_id, created_at DESC, id DESC);

CREATE TABLE assets (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label       text NOT NULL,
    -- Unconstrained numeric keeps the scale the client sent ("12.50" comes back "12.50");
    -- the CHECK gives the bounds of numeric(38, 7): 7 decimals (Stellar's stroop), 31 digits.
    amount      numeric NOT NULL CHECK (amount >= 0 AND amount < 1e31 AND scale(amount) <= 7),
    asset_code  text,                                 -- XLM or CODE:ISSUER
    description text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX assets_user_page_idx ON assets (user_id, created_at DESC, id DESC);

CREATE TABLE messages (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title              text,
    content            text NOT NULL,                 -- private: never logged, never in activity
    -- releaseRule {kind, value} as typed columns, so the capsule can filter in SQL.
    release_rule_kind  text NOT NULL CHECK (release_rule_kind IN ('on_release', 'on_date', 'after_release')),
    release_on_date    date,
    release_after_days integer CHECK (release_after_days >= 1),
    -- audience {"all": true}, or the rows of message_audience when false.
    audience_all       boolean NOT NULL,
    media_id           uuid,                          -- an archive item; the archive adds the FK
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (
        (release_rule_kind = 'on_release' AND release_on_date IS NULL AND release_after_days IS NULL)
        OR (release_rule_kind = 'on_date' AND release_on_date IS NOT NULL AND release_after_days IS NULL)
        OR (release_rule_kind = 'after_release' AND release_on_date IS NULL AND release_after_days IS NOT NULL)
    )
);
CREATE INDEX messages_user_page_idx ON messages (user_id, created_at DESC, id DESC);

-- A join table rather than a jsonb list: deleting a beneficiary removes it from every
-- audience by cascade, and "messages for this beneficiary" is an indexed lookup.
CREATE TABLE message_audience (
    message_id     uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    PRIMARY KEY (message_id, beneficiary_id)
);
CREATE INDEX message_audience_beneficiary_idx ON message_audience (beneficiary_id);
