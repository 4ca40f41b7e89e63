-- Sign out everywhere (POST /api/auth/logout-all). A session token carries the account's
-- session generation from when it was issued (the JWT's `gen` claim; tokens from before this
-- migration carry none, read as 0); raising the account's ends every token issued before.
ALTER TABLE users ADD COLUMN session_generation integer NOT NULL DEFAULT 0
    CHECK (session_generation >= 0);
