-- An asset may be a thing (a piano, a ring, a watch): recorded without an amount, it goes whole to
-- everyone it is addressed to, with no share and no unit (docs/capsule.md "Things"). Only a thing:
-- an asset with a currency (asset_code, XLM or CODE:ISSUER) is a quantity of it and keeps its
-- amount, so a thing is exactly an asset whose amount and asset code are both NULL.
ALTER TABLE assets ALTER COLUMN amount_sealed DROP NOT NULL;
ALTER TABLE assets DROP CONSTRAINT IF EXISTS assets_thing_has_no_currency;
ALTER TABLE assets ADD CONSTRAINT assets_thing_has_no_currency
    CHECK (amount_sealed IS NOT NULL OR asset_code IS NULL);
