-- How to refer to a person in the languages that mark grammatical gender (docs/pages.md,
-- "Grammatical gender"): for the owner (users), each beneficiary and each guardian, one of
-- feminine, masculine or neutral, NULL until someone says. The sentences that agree with the
-- person use the form for it (core/text/gender.py); NULL and neutral read wording that needs no
-- gender. Plain like locale and time_zone, beside which it sits (how to write to a person), not
-- sealed like names: a sealed column could hold no CHECK, and three words tell a dump nothing of
-- whose row it is that the row's sealed name would.
ALTER TABLE users ADD COLUMN IF NOT EXISTS grammatical_gender text
    CHECK (grammatical_gender IN ('feminine', 'masculine', 'neutral'));
ALTER TABLE beneficiaries ADD COLUMN IF NOT EXISTS grammatical_gender text
    CHECK (grammatical_gender IN ('feminine', 'masculine', 'neutral'));
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS grammatical_gender text
    CHECK (grammatical_gender IN ('feminine', 'masculine', 'neutral'));
