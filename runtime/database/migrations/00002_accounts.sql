-- Accounts: PostgreSQL is their record, Redis a cache the account store fills on a miss
-- (runtime/auth), so that a lost Redis loses no account and no password. Sessions and
-- tokens stay in Redis only (losing them means signing in again).

-- +goose Up
CREATE TABLE users (
    id              text        PRIMARY KEY,
    email           text        NOT NULL UNIQUE,
    name            text        NOT NULL,
    password_hash   text        NOT NULL,
    tier            text        NOT NULL,
    telegram_linked boolean     NOT NULL DEFAULT false,
    -- Bumped by every password change: sessions and tokens made under another value die.
    generation      bigint      NOT NULL,
    created_at      timestamptz NOT NULL
);

-- +goose Down
DROP TABLE users;
