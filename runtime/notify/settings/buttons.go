package settings

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Why a button press decides nothing (the presser is told which).
var (
	ErrButtonUnknown = errors.New("this button is not known")
	ErrButtonChat    = errors.New("this button is not for this chat")
	ErrButtonUsed    = errors.New("this approval was already decided here")
	ErrButtonExpired = errors.New("this approval has expired")
)

// Button is what an approval message's buttons decide: user's approval of Signal, sent to
// Chat as message Message.
type Button struct {
	User, Signal string
	Chat         int64
	Message      int
}

// NewButton makes the opaque token of an approval message's buttons (their callback data
// carries it, nothing else), valid until expires.
func (s *Store) NewButton(ctx context.Context, user, signal string, chat int64, expires time.Time) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	_, err := s.DB.Exec(ctx, `INSERT INTO telegram_buttons (token, user_id, signal_id, chat_id, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		token, user, signal, chat, expires)
	return token, err
}

// ButtonSent records the message that carries token's buttons.
func (s *Store) ButtonSent(ctx context.Context, token string, message int) error {
	_, err := s.DB.Exec(ctx, `UPDATE telegram_buttons SET message_id = $2 WHERE token = $1`, token, message)
	return err
}

// Press spends token for a press from chat: only from the chat the message went to, while
// that chat is still linked to the approval's user, once, before the approval expires.
// A refused press changes nothing and says why.
func (s *Store) Press(ctx context.Context, token string, chat int64) (Button, error) {
	var b Button
	err := s.DB.QueryRow(ctx, `UPDATE telegram_buttons SET used_at = $3
		WHERE token = $1 AND chat_id = $2 AND used_at IS NULL AND expires_at > $3
		AND EXISTS (SELECT 1 FROM telegram_chats c WHERE c.chat_id = $2 AND c.user_id = telegram_buttons.user_id)
		RETURNING user_id, signal_id, chat_id, message_id`, token, chat, s.now()).Scan(&b.User, &b.Signal, &b.Chat, &b.Message)
	if !errors.Is(err, pgx.ErrNoRows) {
		return b, err
	}
	var used *time.Time
	var expires time.Time
	var owner int64
	err = s.DB.QueryRow(ctx, `SELECT chat_id, used_at, expires_at FROM telegram_buttons WHERE token = $1`, token).Scan(&owner, &used, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return b, ErrButtonUnknown
	case err != nil:
		return b, err
	case owner != chat:
		return b, ErrButtonChat
	case used != nil:
		return b, ErrButtonUsed
	case !expires.After(s.now()):
		return b, ErrButtonExpired
	}
	return b, ErrButtonChat // the chat was unlinked from the approval's user since
}

// PruneButtons forgets buttons a day past their approval's expiry.
func (s *Store) PruneButtons(ctx context.Context) error {
	_, err := s.DB.Exec(ctx, `DELETE FROM telegram_buttons WHERE expires_at < $1`, s.now().Add(-24*time.Hour))
	return err
}
