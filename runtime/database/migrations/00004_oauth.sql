-- OAuth client registrations and consents (authorizations): PostgreSQL is their record
-- (runtime/auth), Redis their working copy with the refresh tokens, which stay in Redis
-- only (a lost Redis means signing in again, never a lost registration or consent).

-- +goose Up
CREATE TABLE oauth_clients (
    id            text        PRIMARY KEY,
    name          text        NOT NULL,
    redirect_uris jsonb       NOT NULL,
    auth_method   text        NOT NULL,
    grant_types   text        NOT NULL,
    scope         text        NOT NULL,
    -- SHA-256 of the secret; empty for a public client.
    secret_hash   text        NOT NULL,
    created_at    timestamptz NOT NULL,
    -- A day until the first token, then the refresh lifetime from the latest grant.
    expires_at    timestamptz NOT NULL
);
CREATE INDEX oauth_clients_expiry ON oauth_clients (expires_at);

CREATE TABLE oauth_authorizations (
    id             text        PRIMARY KEY,
    user_id        text        NOT NULL,
    client_id      text        NOT NULL,
    client_name    text        NOT NULL,
    scope          text        NOT NULL,
    resource       text        NOT NULL,
    gen            bigint      NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    revoked_reason text        NOT NULL DEFAULT ''
);
CREATE INDEX oauth_authorizations_by_user ON oauth_authorizations (user_id, created_at DESC);

-- +goose Down
DROP TABLE oauth_authorizations;
DROP TABLE oauth_clients;
