-- Each bot's book state as its last commit left it (runtime/bookstate): open positions,
-- per-day analytics, the starting equity and the risk counters. The executor's commit
-- appends it to the partition's archive stream with the facts of history, and the
-- archiver copies it here; a Redis that lost it gets it back from here. Each row carries
-- the archive entry it was copied from (ms, seq): a copy older than the row is never
-- written over it. `part` is the bot's queue partition, which a restore reads by.

-- +goose Up
CREATE TABLE book_positions (
    bot_id   text   NOT NULL,
    symbol   text   NOT NULL,
    part     integer NOT NULL,
    -- The position as the book stores it (JSON text, exact decimals); NULL once closed.
    position text,
    ms       bigint NOT NULL,
    seq      bigint NOT NULL,
    PRIMARY KEY (bot_id, symbol)
);
CREATE INDEX book_positions_part ON book_positions (part) WHERE position IS NOT NULL;

CREATE TABLE book_days (
    bot_id text    NOT NULL,
    day    date    NOT NULL,
    part   integer NOT NULL,
    -- The day's aggregate as the book stores it (runtime/analytics Day).
    value  text    NOT NULL,
    ms     bigint  NOT NULL,
    seq    bigint  NOT NULL,
    PRIMARY KEY (bot_id, day)
);
CREATE INDEX book_days_part ON book_days (part);

CREATE TABLE book_bots (
    bot_id text    PRIMARY KEY,
    part   integer NOT NULL,
    -- The free quote balance the first entry was sized from; NULL: not known.
    start  numeric,
    -- The risk counters as stored: field, value, field, value, ...
    risk   text[]  NOT NULL,
    ms     bigint  NOT NULL,
    seq    bigint  NOT NULL
);
CREATE INDEX book_bots_part ON book_bots (part);

-- Paper accounts' money (runtime/exchange/paper record.go): the balance, the margin the
-- futures reserve, the last refill, and each bot's holding or futures position by its
-- field, as the paper exchange stores them. Versioned by the account's change number.
CREATE TABLE paper_accounts (
    account_id     text    PRIMARY KEY,
    part           integer NOT NULL,
    balance        numeric NOT NULL,
    margin         numeric NOT NULL,
    last_refill_ms bigint,
    seq            bigint  NOT NULL
);
CREATE INDEX paper_accounts_part ON paper_accounts (part);

CREATE TABLE paper_holdings (
    account_id text   NOT NULL,
    field      text   NOT NULL,
    -- NULL once the holding is gone (kept, so that an older change is not written over it).
    value      text,
    seq        bigint NOT NULL,
    PRIMARY KEY (account_id, field)
);

-- +goose Down
DROP TABLE paper_holdings;
DROP TABLE paper_accounts;
DROP TABLE book_bots;
DROP TABLE book_days;
DROP TABLE book_positions;
