package settings

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify"
)

// MaxWebhooks is how many destinations a user may have.
const MaxWebhooks = 5

// Formats of a destination's deliveries.
const (
	FormatJSON    = "json"
	FormatSlack   = "slack"
	FormatDiscord = "discord"
)

// Errors of CreateWebhook.
var (
	ErrTooMany    = fmt.Errorf("at most %d webhook destinations", MaxWebhooks)
	ErrBadFormat  = inputError{errors.New("format must be json, slack or discord")}
	ErrNoWebhook  = errors.New("no such webhook destination")
	errEmptyKinds = inputError{errors.New("choose at least one event")}
)

// inputError is a refusal of what the user gave (a format, an event, a destination the
// egress rules refuse), as against a failure of the store.
type inputError struct{ error }

func (e inputError) Unwrap() error { return e.error }

// IsInput says whether err refuses the user's input.
func IsInput(err error) bool {
	var in inputError
	return errors.As(err, &in)
}

// Webhook is one outbound destination. Its URL and secret are never shown after creation
// (a URL may carry a token: Slack's and Discord's do), only its host.
type Webhook struct {
	ID     string
	User   string
	URL    string
	Format string
	Kinds  []notify.Kind
	// Secret signs the JSON format's deliveries (egress.Sign).
	Secret       string
	CreatedAt    time.Time
	FailingSince *time.Time
	DisabledAt   *time.Time
}

// Host is the destination URL's host: all that is shown of it after its creation.
func (w Webhook) Host() string {
	u, err := url.Parse(w.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// Wants says whether w takes events of kind k.
func (w Webhook) Wants(k notify.Kind) bool {
	for _, x := range w.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// CreateWebhook adds a destination for user after checking its URL with check (the egress
// client's: scheme and every address the name resolves to). The secret is made here.
func (s *Store) CreateWebhook(ctx context.Context, user, url, format string, kinds []notify.Kind,
	check func(context.Context, string) error) (Webhook, error) {
	switch format {
	case FormatJSON, FormatSlack, FormatDiscord:
	default:
		return Webhook{}, ErrBadFormat
	}
	if len(kinds) == 0 {
		return Webhook{}, errEmptyKinds
	}
	for _, k := range kinds {
		if !k.Valid() {
			return Webhook{}, inputError{fmt.Errorf("unknown event %q", k)}
		}
	}
	if err := check(ctx, url); err != nil {
		return Webhook{}, inputError{err}
	}
	secret, err := egress.NewSecret()
	if err != nil {
		return Webhook{}, err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return Webhook{}, err
	}
	w := Webhook{ID: "wh_" + hex.EncodeToString(id), User: user, URL: url, Format: format, Kinds: kinds,
		Secret: secret, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	err = pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		// A lock per user serialises two creations, so that the count holds.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('notify_webhooks:' || $1))`, user); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM notify_webhooks WHERE user_id = $1`, user).Scan(&n); err != nil {
			return err
		}
		if n >= MaxWebhooks {
			return ErrTooMany
		}
		_, err := tx.Exec(ctx, `INSERT INTO notify_webhooks (id, user_id, url, format, kinds, secret, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, w.ID, user, url, format, kindTexts(kinds), secret, w.CreatedAt)
		return err
	})
	return w, err
}

func kindTexts(ks []notify.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

const webhookColumns = `id, user_id, url, format, kinds, secret, created_at, failing_since, disabled_at`

func scanWebhook(row pgx.Row) (Webhook, error) {
	var w Webhook
	var kinds []string
	err := row.Scan(&w.ID, &w.User, &w.URL, &w.Format, &kinds, &w.Secret, &w.CreatedAt, &w.FailingSince, &w.DisabledAt)
	for _, k := range kinds {
		w.Kinds = append(w.Kinds, notify.Kind(k))
	}
	return w, err
}

// Webhooks are user's destinations, oldest first.
func (s *Store) Webhooks(ctx context.Context, user string) ([]Webhook, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+webhookColumns+` FROM notify_webhooks WHERE user_id = $1 ORDER BY created_at, id`, user)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Webhook, error) { return scanWebhook(r) })
}

// Webhook is user's destination id.
func (s *Store) Webhook(ctx context.Context, user, id string) (Webhook, error) {
	w, err := scanWebhook(s.DB.QueryRow(ctx, `SELECT `+webhookColumns+` FROM notify_webhooks WHERE user_id = $1 AND id = $2`, user, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNoWebhook
	}
	return w, err
}

// DeleteWebhook removes user's destination id.
func (s *Store) DeleteWebhook(ctx context.Context, user, id string) error {
	t, err := s.DB.Exec(ctx, `DELETE FROM notify_webhooks WHERE user_id = $1 AND id = $2`, user, id)
	if err == nil && t.RowsAffected() == 0 {
		return ErrNoWebhook
	}
	return err
}

// EnableWebhook turns a disabled destination on again, its failures forgotten.
func (s *Store) EnableWebhook(ctx context.Context, user, id string) error {
	t, err := s.DB.Exec(ctx, `UPDATE notify_webhooks SET disabled_at = NULL, failing_since = NULL WHERE user_id = $1 AND id = $2`, user, id)
	if err == nil && t.RowsAffected() == 0 {
		return ErrNoWebhook
	}
	return err
}

// DeliveryFailed records a failed delivery to id at now and reports whether the
// destination has been failing for longer than limit and was disabled by this call.
func (s *Store) DeliveryFailed(ctx context.Context, id string, now time.Time, limit time.Duration) (bool, error) {
	var disabled bool
	err := s.DB.QueryRow(ctx, `UPDATE notify_webhooks SET failing_since = COALESCE(failing_since, $2),
		disabled_at = CASE WHEN disabled_at IS NULL AND COALESCE(failing_since, $2) <= $3 THEN $2 ELSE disabled_at END
		WHERE id = $1 RETURNING COALESCE(disabled_at = $2, false)`, id, now, now.Add(-limit)).Scan(&disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return disabled, err
}

// DeliveryOK records a successful delivery to id: it is not failing.
func (s *Store) DeliveryOK(ctx context.Context, id string) error {
	_, err := s.DB.Exec(ctx, `UPDATE notify_webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, id)
	return err
}
