-- The audit journal: every call that changed something (mcpd's tools, the dashboard's
-- actions). Each entry is appended to its user's Redis stream and to the archive stream
-- of the user's partition, which the archiver copies here by the entry's ID, once.

-- +goose Up
CREATE TABLE audit_log (
    user_id     text        NOT NULL,
    -- The entry's ID in the user's Redis stream (ms-seq), the journal's cursor.
    ms          bigint      NOT NULL,
    seq         bigint      NOT NULL,
    at          timestamptz NOT NULL,
    client_id   text        NOT NULL,
    client_name text        NOT NULL,
    channel     text        NOT NULL,
    tool        text        NOT NULL,
    -- Redacted and capped: not always JSON (a capped value ends with a marker).
    arguments   text        NOT NULL,
    ok          boolean     NOT NULL,
    code        text        NOT NULL,
    message     text        NOT NULL,
    PRIMARY KEY (user_id, ms, seq)
);

-- +goose Down
DROP TABLE audit_log;
