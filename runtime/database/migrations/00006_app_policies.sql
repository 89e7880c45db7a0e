-- What a user allows the apps they connected (runtime/apppolicy): each app's policy and the
-- kill switch. PostgreSQL is their record and Redis the copy the admission script reads on
-- every app call; a lost Redis gets them back from here before any app call is admitted,
-- so a suspension or a limit never lapses with Redis.

-- +goose Up
CREATE TABLE app_policies (
    user_id         text        NOT NULL,
    client_id       text        NOT NULL,
    live            boolean     NOT NULL,
    -- Empty: every bot of the user.
    bots            text[]      NOT NULL,
    orders_per_hour integer     NOT NULL,
    -- USDT; 0 is no cap.
    order_notional  numeric     NOT NULL,
    day_notional    numeric     NOT NULL,
    approve         boolean     NOT NULL,
    approve_above   numeric     NOT NULL,
    -- Raised by every change: Redis's copy carries it, and a copy older than the one
    -- Redis holds is never written over it.
    version         bigint      NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, client_id)
);

-- A row while the user's kill switch is on.
CREATE TABLE app_suspensions (
    user_id text        PRIMARY KEY,
    since   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE app_suspensions;
DROP TABLE app_policies;
