-- Each person's language and time zone (docs/translations.md): what the service writes for the
-- owner, a beneficiary or a guardian (emails, pages, dates) is in their `locale` (a BCP 47 tag,
-- one of the supported languages) and their `time_zone` (an IANA name). NULL until someone sets
-- it: English and UTC for email, the browser's Accept-Language for pages. No CHECK here: the
-- supported languages are a setting (LANGUAGES), checked by the API; a tag an operator has since
-- removed stays stored and reads English (core.text.i18n.speaking).
ALTER TABLE users ADD COLUMN IF NOT EXISTS locale text;
ALTER TABLE users ADD COLUMN IF NOT EXISTS time_zone text;
ALTER TABLE beneficiaries ADD COLUMN IF NOT EXISTS locale text;
ALTER TABLE beneficiaries ADD COLUMN IF NOT EXISTS time_zone text;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS locale text;
ALTER TABLE guardians ADD COLUMN IF NOT EXISTS time_zone text;
