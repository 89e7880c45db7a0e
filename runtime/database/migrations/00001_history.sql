-- The archive of trading history: what the executor's commits append to the partitions'
-- archive streams (runtime/archive), copied here by the archiver. Money and quantities are
-- NUMERIC (exact decimals, as the book keeps them); times are timestamptz (the book's
-- milliseconds fit exactly).

-- +goose Up
-- A trade's ID is the client order ID that realised it: unique within its bot.
CREATE TABLE trades (
    id           text        NOT NULL,
    bot_id       text        NOT NULL,
    signal_id    text        NOT NULL,
    position_id  text        NOT NULL,
    symbol       text        NOT NULL,
    kind         text        NOT NULL,
    side         text        NOT NULL,
    size         numeric     NOT NULL,
    entry_price  numeric     NOT NULL,
    exit_price   numeric     NOT NULL,
    leverage     integer     NOT NULL,
    pnl          numeric     NOT NULL,
    fees         numeric     NOT NULL,
    net_pnl      numeric     NOT NULL,
    closed       boolean     NOT NULL,
    reason       text        NOT NULL,
    opened_at    timestamptz NOT NULL,
    closed_at    timestamptz NOT NULL,
    PRIMARY KEY (bot_id, id)
);
CREATE INDEX trades_bot_closed_at ON trades (bot_id, closed_at, id);

CREATE TABLE orders (
    bot_id          text        NOT NULL,
    client_order_id text        NOT NULL,
    order_id        text        NOT NULL,
    signal_id       text        NOT NULL,
    leg             text        NOT NULL,
    symbol          text        NOT NULL,
    kind            text        NOT NULL,
    side            text        NOT NULL,
    type            text        NOT NULL,
    status          text        NOT NULL,
    amount          numeric     NOT NULL,
    price           numeric,
    filled_amount   numeric     NOT NULL,
    avg_price       numeric     NOT NULL,
    fee             numeric     NOT NULL,
    fee_asset       text        NOT NULL,
    reduce_only     boolean     NOT NULL,
    leverage        integer     NOT NULL,
    code            text        NOT NULL,
    error           text        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (bot_id, client_order_id)
);
CREATE INDEX orders_bot_created_at ON orders (bot_id, created_at DESC);

-- A signal's result: the first one stored is its result (the executor's SET NX), so a row
-- is never replaced.
CREATE TABLE signal_results (
    signal_id   text        PRIMARY KEY,
    bot_id      text        NOT NULL,
    success     boolean     NOT NULL,
    code        text        NOT NULL,
    source      text        NOT NULL,
    action      text        NOT NULL,
    received_at timestamptz,
    decided_at  timestamptz NOT NULL,
    result      jsonb       NOT NULL
);
CREATE INDEX signal_results_bot_received_at ON signal_results (bot_id, received_at DESC);

-- How far each archive stream is copied: the last entry ID (its two numbers, so that IDs
-- compare as Redis orders them) committed with the rows it carried, so that a restarted
-- archiver goes on from there and the stream is trimmed only up to it.
CREATE TABLE archive_progress (
    stream     text        PRIMARY KEY,
    last_ms    bigint      NOT NULL,
    last_seq   bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE archive_progress;
DROP TABLE signal_results;
DROP TABLE orders;
DROP TABLE trades;
