-- One lease for every job family that works on rows (docs/conventions.md, "Jobs"): a job holds
-- its work under its own id (`holder`, the arq job id) until `until`, renewed every third of the
-- lease while it runs. A worker killed mid-job stops renewing; once `until` has passed, the
-- worker's lease sweep enqueues the same job and arguments under an id of their own, because arq
-- keeps the dead job's id marked in progress for the longest job timeout and refuses it until
-- then. The email outbox keeps its claim on the rows themselves (`outbox.claimed_by`, 0026):
-- one job there holds many rows, each of which may be taken over apart.
CREATE TABLE IF NOT EXISTS job_leases (
    name text PRIMARY KEY,          -- the work held: '<job>:<row id>', or the cron's name
    job text NOT NULL,              -- the arq function that does it
    args text[] NOT NULL DEFAULT '{}',
    holder text NOT NULL,           -- the arq job id holding it
    until timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS job_leases_until ON job_leases (until);
