-- Notifications (runtime/notify, cmd/notifyd): what a user chose to be told, where, and
-- the deliveries themselves.
--
-- notify_outbox is the delivery queue and the delivery log at once: notifyd writes a row
-- per event and destination when it reads the event (unique per event and channel, so an
-- event read twice is queued once), sends it, and keeps it with its outcome for the log.
-- notify_progress is how far notifyd has read each Redis stream; the archiver trims a
-- partition's archive stream no further than this while notifyd is reading.

-- +goose Up
CREATE TABLE notify_prefs (
    user_id    text PRIMARY KEY,
    prefs      jsonb NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE telegram_chats (
    user_id   text PRIMARY KEY,
    chat_id   bigint NOT NULL UNIQUE,
    linked_at timestamptz NOT NULL
);

-- A link code is kept as its SHA-256 only; it is single-use and lives ten minutes.
CREATE TABLE telegram_link_codes (
    code_hash  text PRIMARY KEY,
    user_id    text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX telegram_link_codes_user ON telegram_link_codes (user_id);

CREATE TABLE notify_webhooks (
    id            text PRIMARY KEY,
    user_id       text NOT NULL,
    url           text NOT NULL,
    format        text NOT NULL,
    kinds         text[] NOT NULL,
    secret        text NOT NULL,
    created_at    timestamptz NOT NULL,
    failing_since timestamptz,
    disabled_at   timestamptz
);
CREATE INDEX notify_webhooks_user ON notify_webhooks (user_id);

CREATE TABLE notify_outbox (
    id          bigserial PRIMARY KEY,
    event_id    text NOT NULL,
    channel     text NOT NULL,
    user_id     text NOT NULL,
    burst       text NOT NULL,
    event       jsonb NOT NULL,
    state       text NOT NULL,
    created_at  timestamptz NOT NULL,
    next_at     timestamptz NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    sent_at     timestamptz,
    last_status text NOT NULL DEFAULT '',
    UNIQUE (event_id, channel)
);
CREATE INDEX notify_outbox_due ON notify_outbox (next_at) WHERE state = 'pending';
CREATE INDEX notify_outbox_burst ON notify_outbox (channel, burst, sent_at);
CREATE INDEX notify_outbox_log ON notify_outbox (channel, id);

CREATE TABLE notify_progress (
    stream     text PRIMARY KEY,
    last_ms    bigint NOT NULL,
    last_seq   bigint NOT NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE notify_progress;
DROP TABLE notify_outbox;
DROP TABLE notify_webhooks;
DROP TABLE telegram_link_codes;
DROP TABLE telegram_chats;
DROP TABLE notify_prefs;
