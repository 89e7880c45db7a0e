package auth

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// oauthDB is PostgreSQL's record of client registrations and consents (authorizations).
// Redis keeps their working copies beside the refresh tokens, which live in Redis only: a
// lost Redis ends every token (the app signs in again) but never a registration or the
// history of what a user consented to.
//
// A registration and a consent are written here first, so one PostgreSQL refused exists
// nowhere. A revocation is made in Redis first (tokens must die whether or not PostgreSQL
// answers) and here after; a revocation this record missed is made again when the consent
// is next listed without its Redis copy.
type oauthDB struct {
	db *pgxpool.Pool
}

// touchTimeout bounds the record's part of a token grant (sliding expiries): a token is
// issued without it when PostgreSQL is slow or down.
const touchTimeout = 500 * time.Millisecond

func (d oauthDB) insertClient(ctx context.Context, c Client, expires time.Time) error {
	redirects, _ := json.Marshal(c.RedirectURIs)
	_, err := d.db.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, auth_method, grant_types, scope, secret_hash,
		created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, c.ID, c.Name, redirects, c.AuthMethod,
		strings.Join(c.GrantTypes, " "), c.Scope, c.secretHash, c.CreatedAt, expires)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// client reads a registration that has not expired; ErrNotFound when none.
func (d oauthDB) client(ctx context.Context, id string, now time.Time) (Client, time.Time, error) {
	var c Client
	var grants string
	var redirects []byte
	var expires time.Time
	err := d.db.QueryRow(ctx, `SELECT id, name, redirect_uris, auth_method, grant_types, scope, secret_hash, created_at, expires_at
		FROM oauth_clients WHERE id = $1 AND expires_at > $2`, id, now).Scan(&c.ID, &c.Name, &redirects, &c.AuthMethod, &grants,
		&c.Scope, &c.secretHash, &c.CreatedAt, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return Client{}, time.Time{}, ErrNotFound
	}
	if err != nil {
		return Client{}, time.Time{}, unavailable(err)
	}
	if err := json.Unmarshal(redirects, &c.RedirectURIs); err != nil {
		return Client{}, time.Time{}, errors.New("corrupt client record")
	}
	c.GrantTypes, c.CreatedAt = strings.Fields(grants), c.CreatedAt.UTC()
	return c, expires, nil
}

// touchClient slides a registration's expiry, never shortening it; best effort, bounded by
// touchTimeout.
func (d oauthDB) touchClient(ctx context.Context, id string, expires time.Time) {
	ctx, cancel := context.WithTimeout(ctx, touchTimeout)
	defer cancel()
	_, _ = d.db.Exec(ctx, `UPDATE oauth_clients SET expires_at = $2 WHERE id = $1 AND expires_at < $2`, id, expires)
}

// purgeClients deletes registrations expired for longer than retention (they can no
// longer be used, and registration is anonymous).
func (d oauthDB) purgeClients(ctx context.Context, now time.Time) error {
	_, err := d.db.Exec(ctx, `DELETE FROM oauth_clients WHERE expires_at < $1`, now.Add(-retention))
	return err
}

func (d oauthDB) insertAuthorization(ctx context.Context, a Authorization) error {
	_, err := d.db.Exec(ctx, `INSERT INTO oauth_authorizations (id, user_id, client_id, client_name, scope, resource, gen,
		created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
		a.ID, a.UserID, a.ClientID, a.ClientName, a.Scope, a.Resource, a.Gen, a.CreatedAt, a.ExpiresAt)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// slide moves an authorization's recorded expiry after a refresh; best effort, bounded by
// touchTimeout.
func (d oauthDB) slide(ctx context.Context, authID string, expires time.Time) {
	ctx, cancel := context.WithTimeout(ctx, touchTimeout)
	defer cancel()
	_, _ = d.db.Exec(ctx, `UPDATE oauth_authorizations SET expires_at = $2 WHERE id = $1 AND expires_at < $2`, authID, expires)
}

// revoke records a revocation unless one is recorded already.
func (d oauthDB) revoke(ctx context.Context, authID string, at time.Time, reason string) error {
	_, err := d.db.Exec(ctx, `UPDATE oauth_authorizations SET revoked_at = $2, revoked_reason = $3
		WHERE id = $1 AND revoked_at IS NULL`, authID, at, reason)
	return err
}

// authorizations lists a user's consents recorded here that were revoked or expired less
// than retention before now, or are neither (LEAST skips a NULL revocation).
func (d oauthDB) authorizations(ctx context.Context, userID string, now time.Time) ([]Authorization, error) {
	rows, err := d.db.Query(ctx, `SELECT id, user_id, client_id, client_name, scope, resource, gen, created_at, expires_at,
		revoked_at, revoked_reason FROM oauth_authorizations
		WHERE user_id = $1 AND LEAST(revoked_at, expires_at) > $2 ORDER BY created_at DESC`,
		userID, now.Add(-retention))
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Authorization, error) {
		var a Authorization
		var revoked *time.Time
		err := row.Scan(&a.ID, &a.UserID, &a.ClientID, &a.ClientName, &a.Scope, &a.Resource, &a.Gen, &a.CreatedAt,
			&a.ExpiresAt, &revoked, &a.RevokedReason)
		a.CreatedAt, a.ExpiresAt, a.LastUsed = a.CreatedAt.UTC(), a.ExpiresAt.UTC(), a.CreatedAt.UTC()
		if revoked != nil {
			a.RevokedAt = revoked.UTC()
		}
		return a, err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	return out, nil
}
