-- legacy-planning: reseal first
-- The plaintext columns that 0012 and 0014 left for rows written before them are dropped
-- (#18 item 3, docs/sealed-text.md "Dropping the plaintext columns"). Dropping a column that
-- still holds text would lose it, so this migration refuses (and changes nothing) while any of
-- them holds a value. `legacy-planning migrate` runs the reseal job (models/sealed_text.reseal,
-- with ENCRYPTION_KEYS) just before this file because of the first line above; without a key,
-- or with rows it could not seal, the refusal below names what is left.
DO $$
DECLARE
    left_over text;
BEGIN
    SELECT string_agg(format('%s (%s rows)', what, n), ', ') INTO left_over FROM (
        SELECT 'messages.title/content' AS what, count(*) AS n FROM messages
            WHERE title IS NOT NULL OR content IS NOT NULL
        UNION ALL SELECT 'archive_items.title/description/file_name', count(*) FROM archive_items
            WHERE title IS NOT NULL OR description IS NOT NULL OR file_name IS NOT NULL
        UNION ALL SELECT 'users.name/email', count(*) FROM users
            WHERE name IS NOT NULL OR email IS NOT NULL
        UNION ALL SELECT 'beneficiaries.name/relationship/email', count(*) FROM beneficiaries
            WHERE name IS NOT NULL OR relationship IS NOT NULL OR email IS NOT NULL
        UNION ALL SELECT 'guardians.name/email/relationship', count(*) FROM guardians
            WHERE name IS NOT NULL OR email IS NOT NULL OR relationship IS NOT NULL
        UNION ALL SELECT 'assets.label/description/amount', count(*) FROM assets
            WHERE label IS NOT NULL OR description IS NOT NULL OR amount IS NOT NULL
        UNION ALL SELECT 'plan_reports.guardian_name/note', count(*) FROM plan_reports
            WHERE guardian_name IS NOT NULL OR note IS NOT NULL
        UNION ALL SELECT 'plan_approvals.guardian_name', count(*) FROM plan_approvals
            WHERE guardian_name IS NOT NULL
        UNION ALL SELECT 'plan_transitions.actor_name', count(*) FROM plan_transitions
            WHERE actor_name IS NOT NULL
    ) counts WHERE n > 0;
    IF left_over IS NOT NULL THEN
        RAISE EXCEPTION 'plaintext not sealed yet, nothing dropped: %', left_over
            USING HINT = 'Set ENCRYPTION_KEYS (with every key the rows were sealed under) and run '
                'legacy-planning migrate again: it seals them first. Rows it cannot open are logged '
                'by the reseal job (put the missing key back in the ring).';
    END IF;
END $$;

-- Constraints that name a dropped column go with it (the *_text_once checks, the amount bounds);
-- what they required is now required of the sealed column.
ALTER TABLE messages DROP COLUMN title, DROP COLUMN content,
    ALTER COLUMN content_sealed SET NOT NULL;
ALTER TABLE archive_items DROP COLUMN title, DROP COLUMN description, DROP COLUMN file_name,
    ALTER COLUMN title_sealed SET NOT NULL, ALTER COLUMN file_name_sealed SET NOT NULL;
ALTER TABLE users DROP COLUMN name, DROP COLUMN email;
ALTER TABLE beneficiaries DROP COLUMN name, DROP COLUMN relationship, DROP COLUMN email,
    ALTER COLUMN name_sealed SET NOT NULL, ALTER COLUMN relationship_sealed SET NOT NULL,
    ALTER COLUMN email_sealed SET NOT NULL;
ALTER TABLE guardians DROP COLUMN name, DROP COLUMN email, DROP COLUMN relationship,
    ALTER COLUMN name_sealed SET NOT NULL, ALTER COLUMN email_sealed SET NOT NULL;
ALTER TABLE assets DROP COLUMN label, DROP COLUMN description, DROP COLUMN amount,
    ALTER COLUMN label_sealed SET NOT NULL, ALTER COLUMN amount_sealed SET NOT NULL;
ALTER TABLE plan_reports DROP COLUMN guardian_name, DROP COLUMN note,
    ALTER COLUMN guardian_name_sealed SET NOT NULL;
ALTER TABLE plan_approvals DROP COLUMN guardian_name,
    ALTER COLUMN guardian_name_sealed SET NOT NULL;
ALTER TABLE plan_transitions DROP COLUMN actor_name;
