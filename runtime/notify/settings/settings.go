// Package settings keeps, in PostgreSQL, where and what each user is told: their
// preferences (notify.Prefs), their linked Telegram chat with its single-use link codes,
// and their outbound webhook destinations. authd's API and dashboard write them; notifyd
// reads them for every event it routes.
package settings

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/runtime/notify"
)

// LinkCodeTTL is how long a Telegram link code can be used.
const LinkCodeTTL = 10 * time.Minute

// ErrCodeInvalid: a link code that is unknown, used or expired (one answer for all three,
// so that a guess learns nothing).
var ErrCodeInvalid = errors.New("the link code is unknown or expired")

// Store is the settings on a PostgreSQL pool.
type Store struct {
	DB  *pgxpool.Pool
	Now func() time.Time
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Prefs are user's preferences (the defaults when they chose nothing).
func (s *Store) Prefs(ctx context.Context, user string) (notify.Prefs, error) {
	var raw []byte
	err := s.DB.QueryRow(ctx, `SELECT prefs FROM notify_prefs WHERE user_id = $1`, user).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return notify.Prefs{}, nil
	}
	if err != nil {
		return notify.Prefs{}, err
	}
	var p notify.Prefs
	return p, json.Unmarshal(raw, &p)
}

// SetPrefs replaces user's preferences with p, which must be valid.
func (s *Store) SetPrefs(ctx context.Context, user string, p notify.Prefs) error {
	if err := p.Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = s.DB.Exec(ctx, `INSERT INTO notify_prefs (user_id, prefs, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET prefs = EXCLUDED.prefs, updated_at = EXCLUDED.updated_at`, user, raw, s.now())
	return err
}

// Chat is user's linked Telegram chat (ok false: none).
func (s *Store) Chat(ctx context.Context, user string) (chat int64, ok bool, err error) {
	err = s.DB.QueryRow(ctx, `SELECT chat_id FROM telegram_chats WHERE user_id = $1`, user).Scan(&chat)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return chat, err == nil, err
}

// ChatUser is the user a Telegram chat is linked to (ok false: none).
func (s *Store) ChatUser(ctx context.Context, chat int64) (user string, ok bool, err error) {
	err = s.DB.QueryRow(ctx, `SELECT user_id FROM telegram_chats WHERE chat_id = $1`, chat).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return user, err == nil, err
}

// NewLinkCode makes user a single-use code that links the chat which sends it (/start
// <code>) within LinkCodeTTL. Only its SHA-256 is stored; the user's earlier codes are
// forgotten, so one code at a time can link.
func (s *Store) NewLinkCode(ctx context.Context, user string) (code string, expires time.Time, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, err
	}
	// Base64url: Telegram's deep-link start parameter allows A-Z, a-z, 0-9, _ and - (64 at most).
	code = base64.RawURLEncoding.EncodeToString(b)
	expires = s.now().Add(LinkCodeTTL)
	err = pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM telegram_link_codes WHERE user_id = $1 OR expires_at < $2`, user, s.now()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO telegram_link_codes (code_hash, user_id, expires_at) VALUES ($1, $2, $3)`,
			hashCode(code), user, expires)
		return err
	})
	return code, expires, err
}

func hashCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// Link spends code and links chat to its user, replacing the user's earlier chat and the
// chat's earlier user. It returns the user.
func (s *Store) Link(ctx context.Context, code string, chat int64) (string, error) {
	var user string
	err := pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM telegram_link_codes WHERE code_hash = $1 AND expires_at > $2 RETURNING user_id`,
			hashCode(code), s.now()).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrCodeInvalid
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM telegram_chats WHERE chat_id = $1 OR user_id = $2`, chat, user); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO telegram_chats (user_id, chat_id, linked_at) VALUES ($1, $2, $3)`, user, chat, s.now())
		return err
	})
	return user, err
}

// Unlink forgets user's chat; it reports whether there was one.
func (s *Store) Unlink(ctx context.Context, user string) (bool, error) {
	t, err := s.DB.Exec(ctx, `DELETE FROM telegram_chats WHERE user_id = $1`, user)
	return t.RowsAffected() > 0, err
}

// UnlinkChat forgets chat (its /stop) and returns the user it was linked to ("" none).
func (s *Store) UnlinkChat(ctx context.Context, chat int64) (string, error) {
	var user string
	err := s.DB.QueryRow(ctx, `DELETE FROM telegram_chats WHERE chat_id = $1 RETURNING user_id`, chat).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return user, err
}
