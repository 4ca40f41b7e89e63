-- Letters announce themselves (#28, docs/capsule.md "Letters announce themselves"): a letter
-- that opens after its plan's release gets a row at the release with the moment it opens; the
-- lifecycle cron walks the partial index of the ones not yet announced whose moment has come,
-- and emails each heir once (models/delivery/letters.py).
CREATE TABLE IF NOT EXISTS letter_openings (
    message_id   uuid PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    plan_id      uuid NOT NULL REFERENCES plans (id) ON DELETE CASCADE,
    opens_at     timestamptz NOT NULL,
    announced_at timestamptz
);
CREATE INDEX IF NOT EXISTS letter_openings_due_idx ON letter_openings (opens_at) WHERE announced_at IS NULL;

-- Plans released before this migration: their letters still to open are announced too (those
-- already open opened silently, as they did then).
INSERT INTO letter_openings (message_id, plan_id, opens_at)
SELECT m.id, p.id, o.opens_at
FROM plans p JOIN messages m ON m.user_id = p.user_id
CROSS JOIN LATERAL (SELECT CASE m.release_rule_kind
    WHEN 'on_date' THEN GREATEST(m.release_on_date::timestamp AT TIME ZONE 'UTC', p.released_at)
    WHEN 'after_release' THEN p.released_at + m.release_after_days * interval '24 hours'
    ELSE p.released_at END AS opens_at) o
WHERE p.status = 'Released' AND o.opens_at > p.released_at AND o.opens_at > clock_timestamp()
ON CONFLICT (message_id) DO NOTHING;
