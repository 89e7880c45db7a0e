-- The Strategy Lab wallet: PostgreSQL is its record (runtime/wallet). A balance and the
-- ledger entry that explains it change in one transaction; a debit also writes its job's
-- row in lab_jobs in that transaction, so a charge never exists without the job it paid
-- for. Redis holds a cache of the balance and the job's working state only.

-- +goose Up
CREATE TABLE wallets (
    user_id text    PRIMARY KEY,
    balance numeric NOT NULL CHECK (balance >= 0),
    -- Bumped by every change: the Redis cache keeps the highest version it was given, so
    -- two writers racing to refresh it never leave the older balance there.
    version bigint  NOT NULL DEFAULT 0
);

CREATE TABLE wallet_ledger (
    id      bigserial   PRIMARY KEY,
    user_id text        NOT NULL,
    kind    text        NOT NULL,
    -- Signed: negative for a debit.
    amount  numeric     NOT NULL,
    -- The balance after this entry.
    balance numeric     NOT NULL,
    job_id  text        NOT NULL DEFAULT '',
    at      timestamptz NOT NULL
);
CREATE INDEX wallet_ledger_by_user ON wallet_ledger (user_id, id DESC);
-- A job is charged once and refunded once, however often its transaction is retried.
CREATE UNIQUE INDEX wallet_ledger_once_per_job ON wallet_ledger (user_id, job_id, kind) WHERE job_id <> '';

-- The Strategy Lab's outbox: a job charged here but not yet in Redis's dispatch stream
-- (dispatched false) is put there by the Strategy Lab engine's relay.
CREATE TABLE lab_jobs (
    user_id    text        NOT NULL,
    id         text        NOT NULL,
    request    jsonb       NOT NULL,
    cost       numeric     NOT NULL,
    created_at timestamptz NOT NULL,
    dispatched boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX lab_jobs_undispatched ON lab_jobs (created_at) WHERE NOT dispatched;

-- +goose Down
DROP TABLE lab_jobs;
DROP TABLE wallet_ledger;
DROP TABLE wallets;
