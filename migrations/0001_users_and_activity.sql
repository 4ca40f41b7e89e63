-- Accounts, their wallets, and the Family Timeline.
-- Timestamps use clock_timestamp() so rows written in one transaction still order strictly.

CREATE TABLE users (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    wallet_address text NOT NULL UNIQUE,            -- the wallet the account was created with
    name           text,
    email          text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Every wallet that can sign in to an account: the primary one and any linked later.
CREATE TABLE user_wallets (
    wallet_address text PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX user_wallets_user_idx ON user_wallets (user_id);

CREATE TABLE activity (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        text NOT NULL,                      -- e.g. beneficiary.created
    entity_type text NOT NULL,                      -- e.g. beneficiary
    entity_id   text,
    summary     text NOT NULL,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb, -- names of changed fields, never private values
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX activity_user_page_idx ON activity (user_id, created_at DESC, id DESC);
