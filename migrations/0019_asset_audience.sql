-- Heirs see what they inherit (#16, docs/capsule.md "Assets"): an asset is addressed like a
-- message or an archive item, to every beneficiary (the default, and what every asset recorded
-- before this meant) or to the rows of asset_audience. Deleting a beneficiary removes its rows;
-- an asset whose list became empty is for nobody, never for everyone.
ALTER TABLE assets ADD COLUMN IF NOT EXISTS audience_all boolean NOT NULL DEFAULT true;

CREATE TABLE IF NOT EXISTS asset_audience (
    asset_id       uuid NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    beneficiary_id uuid NOT NULL REFERENCES beneficiaries (id) ON DELETE CASCADE,
    PRIMARY KEY (asset_id, beneficiary_id)
);
CREATE INDEX IF NOT EXISTS asset_audience_beneficiary_idx ON asset_audience (beneficiary_id);
