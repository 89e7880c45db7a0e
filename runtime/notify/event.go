// Package notify holds what a user is told about their bots, apart from how it travels:
// the events (Event), the user's choices of them (Prefs), the grouping of bursts into a
// few messages (Burst) and each channel's form of a message (Text, Slack, Discord, JSON).
// The delivery (notifyd: the stream it reads, Telegram, outbound webhooks through
// runtime/egress) is not built yet; docs/notifications.md says what is.
//
// An event carries the figures a user needs (symbol, side, amount, price, realised PnL,
// a reason's code) and names (bot, connection), and no field that could hold a key, a
// secret, a token or a URL: what is never in an Event cannot reach a message.
package notify

import (
	"time"

	"github.com/sigops/sigops/runtime/httpapi"
)

// Kind is what happened.
type Kind string

// The kinds of events.
const (
	// Fill: an order of the bot filled (an entry, or an exit with its realised PnL).
	Fill Kind = "fill"
	// OrderRefused: the exchange refused an order of the bot.
	OrderRefused Kind = "order_refused"
	// SignalDeadLettered: a signal was given up after its attempts.
	SignalDeadLettered Kind = "signal_dead_lettered"
	// SignalExpired: a signal arrived too late to execute.
	SignalExpired Kind = "signal_expired"
	// BotPaused and BotResumed: a runtime pause began or ended (Reason: registry's pause
	// reasons, or Agent for an app's pause).
	BotPaused  Kind = "bot_paused"
	BotResumed Kind = "bot_resumed"
	// ConnectionInvalid: an exchange connection stopped working (Reason: why).
	ConnectionInvalid Kind = "connection_invalid"
	// ApprovalRequested and ApprovalDecided: an agent's order waits for the user, or was
	// approved, rejected or expired (Reason).
	ApprovalRequested Kind = "approval_requested"
	ApprovalDecided   Kind = "approval_decided"
	// DailySummary: the day's PnL per bot, open positions and balance, at the user's hour.
	DailySummary Kind = "daily_summary"
	// WebhookDisabled: one of the user's webhook destinations failed for a day and was
	// turned off (Destination: its host).
	WebhookDisabled Kind = "webhook_disabled"
)

// Kinds is every kind, in the order a settings page lists them.
var Kinds = []Kind{Fill, OrderRefused, SignalDeadLettered, SignalExpired, BotPaused, BotResumed,
	ConnectionInvalid, ApprovalRequested, ApprovalDecided, DailySummary, WebhookDisabled}

// Valid says whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Urgent kinds are never held back: an approval expires, so its request goes at once, is
// never merged with others and sounds in quiet hours too.
func (k Kind) Urgent() bool { return k == ApprovalRequested }

// Event is one thing that happened to one user's bot or connection.
type Event struct {
	// ID is stable across every delivery of the event (the fact's own ID), so that a
	// delivery repeated after a crash is recognised.
	ID   string    `json:"id"`
	Kind Kind      `json:"kind"`
	At   time.Time `json:"at"`
	// User is whom the event is for; it routes the event and is not shown.
	User string `json:"-"`
	// Bot is the bot's name, BotID its ID ("" for a connection's event).
	BotID string `json:"botId,omitempty"`
	Bot   string `json:"bot,omitempty"`
	// Connection is an exchange connection's name (ConnectionInvalid).
	Connection string `json:"connection,omitempty"`
	// Destination is a webhook destination's host (WebhookDisabled): never its URL, whose
	// path may hold a token.
	Destination string `json:"destination,omitempty"`
	// Symbol, Side (buy or sell), Amount and Price describe an order or a fill.
	Symbol string         `json:"symbol,omitempty"`
	Side   string         `json:"side,omitempty"`
	Amount httpapi.Number `json:"amount,omitzero"`
	Price  httpapi.Number `json:"price,omitzero"`
	// PnL is an exit's realised net PnL (nil: the fill opened or added).
	PnL *httpapi.Number `json:"pnl,omitempty"`
	// Reason is a code that says why (a pause's reason, an error code, an approval's
	// outcome); never an exchange's or a user's free text.
	Reason string `json:"reason,omitempty"`
	// Attempts is how many times a dead-lettered signal was tried.
	Attempts int `json:"attempts,omitempty"`
	// Signal is the signal an approval is for (the ID its buttons decide).
	Signal string `json:"signalId,omitempty"`
	// App is the connected app of an approval.
	App string `json:"app,omitempty"`
	// Expires is when an approval request lapses.
	Expires time.Time `json:"expires,omitzero"`
	// Summary is a DailySummary's bots, Balances its paper accounts' free balances, Day
	// its UTC day (YYYY-MM-DD).
	Summary  []BotDay  `json:"summary,omitempty"`
	Balances []Balance `json:"balances,omitempty"`
	Day      string    `json:"day,omitempty"`
}

// Balance is an account's free balance in a DailySummary.
type Balance struct {
	Account  string         `json:"account"`
	Currency string         `json:"currency"`
	Amount   httpapi.Number `json:"amount"`
}

// BotDay is one bot's day in a DailySummary: its state, realised net PnL over the UTC day
// (runtime/analytics' figure, as the dashboard shows it) and open positions.
type BotDay struct {
	Bot   string         `json:"bot"`
	State string         `json:"state"`
	PnL   httpapi.Number `json:"pnl"`
	Open  []string       `json:"open,omitempty"`
}
