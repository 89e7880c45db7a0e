-- notifyd's bursts (runtime/notify/outbox): one row per channel and burst (a bot's events
-- of one kind, or one urgent event) with its pending deliveries. The deliverer finds what
-- is due here, by next_at: the burst's retry after a failure, or the end of its gathering
-- window after a message. So a channel that is down costs a step nothing but these rows,
-- however many deliveries wait. seq moves at every delivery queued, so that the deliverer
-- marks a burst empty only when nothing was queued since it read it.

-- +goose Up
CREATE TABLE notify_bursts (
    channel      text NOT NULL,
    burst        text NOT NULL,
    user_id      text NOT NULL,
    next_at      timestamptz NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    seq          bigint NOT NULL DEFAULT 0,
    has_pending  boolean NOT NULL,
    last_sent_at timestamptz,
    PRIMARY KEY (channel, burst)
);
CREATE INDEX notify_bursts_due ON notify_bursts (next_at) WHERE has_pending;
CREATE INDEX notify_outbox_pending ON notify_outbox (channel, burst, id) WHERE state = 'pending';
-- A delivery's own next_at no longer decides anything (its burst's does).
DROP INDEX notify_outbox_due;

-- +goose Down
CREATE INDEX notify_outbox_due ON notify_outbox (next_at) WHERE state = 'pending';
DROP INDEX notify_outbox_pending;
DROP TABLE notify_bursts;
