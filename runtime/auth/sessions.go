package auth

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// SessionCookie is the dashboard session's cookie. authd sets it; every daemon behind the
// same origin that accepts sessions (webhookd's read API) reads it by this name. The
// __Host- prefix makes browsers refuse it unless Secure, Path=/ and host-only, so a sibling
// subdomain cannot plant or overwrite it.
const SessionCookie = "__Host-sigops_session"

// ErrNoSession: the cookie names no live session.
var ErrNoSession = errors.New("no session")

// Session is a dashboard session. The cookie holds a random 256-bit value; Redis holds its
// SHA-256, so reading Redis does not yield a usable cookie.
type Session struct {
	// Hash is the SHA-256 of the cookie value (the session's name in Redis).
	Hash   string
	UserID string
	Gen    int64
	// CSRF is the session's synchronizer token for every form it posts.
	CSRF      string
	CreatedAt time.Time
	// ExpiresAt is the end of the current idle window (slid by Lookup).
	ExpiresAt time.Time
}

// Sessions stores dashboard sessions: SessionIdle sliding, capped at SessionMaxLifetime.
type Sessions struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// NewSessions returns the session store.
func NewSessions(rdb redis.UniversalClient, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{rdb: rdb, now: now}
}

// Create starts a session for u and returns the cookie value. A login always makes a new
// session (no fixation).
func (s *Sessions) Create(ctx context.Context, u User) (string, Session, error) {
	raw := RandomToken(32)
	now := s.now()
	sess := Session{Hash: HashSecret(raw), UserID: u.ID, Gen: u.Generation, CSRF: RandomToken(32), CreatedAt: now,
		ExpiresAt: now.Add(SessionIdle)}
	key := store.Session(sess.Hash)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "uid", u.ID, "gen", u.Generation, "csrf", sess.CSRF, "createdAt", now.UnixMilli())
		p.Expire(ctx, key, SessionIdle)
		p.SAdd(ctx, store.UserSessions(u.ID), sess.Hash)
		return nil
	})
	if err != nil {
		return "", Session{}, err
	}
	return raw, sess, nil
}

// Lookup finds the session of a cookie value and slides its idle window. A session made
// before the user's last password change, or older than SessionMaxLifetime, is destroyed.
func (s *Sessions) Lookup(ctx context.Context, raw string) (Session, error) {
	if raw == "" || len(raw) > 100 {
		return Session{}, ErrNoSession
	}
	hash := HashSecret(raw)
	key := store.Session(hash)
	m, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return Session{}, err
	}
	if m["uid"] == "" {
		return Session{}, ErrNoSession
	}
	gen, _ := strconv.ParseInt(m["gen"], 10, 64)
	created, _ := strconv.ParseInt(m["createdAt"], 10, 64)
	now := s.now()
	sess := Session{Hash: hash, UserID: m["uid"], Gen: gen, CSRF: m["csrf"], CreatedAt: time.UnixMilli(created),
		ExpiresAt: now.Add(SessionIdle)}
	if cap := sess.CreatedAt.Add(SessionMaxLifetime); cap.Before(sess.ExpiresAt) {
		sess.ExpiresAt = cap
	}
	pipe := s.rdb.Pipeline()
	cur := pipe.HGet(ctx, store.User(sess.UserID), fUserGen)
	pipe.PExpire(ctx, key, sess.ExpiresAt.Sub(now))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Session{}, err
	}
	g, _ := strconv.ParseInt(cur.Val(), 10, 64)
	if g != gen || !now.Before(sess.ExpiresAt) {
		_ = s.destroyHash(ctx, sess.UserID, hash)
		return Session{}, ErrNoSession
	}
	return sess, nil
}

// Destroy ends the session of a cookie value (logout).
func (s *Sessions) Destroy(ctx context.Context, sess Session) error {
	return s.destroyHash(ctx, sess.UserID, sess.Hash)
}

func (s *Sessions) destroyHash(ctx context.Context, uid, hash string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, store.Session(hash))
		p.SRem(ctx, store.UserSessions(uid), hash)
		return nil
	})
	return err
}
