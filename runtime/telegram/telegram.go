// Package telegram sends sigops's messages through the platform's Telegram bot: a message to
// a chat, silently or not, within Telegram's published send limits (about one message a
// second to one chat, thirty a second in all: https://core.telegram.org/bots/faq, "My bot
// is hitting limits"), and a 429 answered with the wait Telegram names (retry_after). The
// Bot API calls are github.com/go-telegram/bot's; the Bot API's address is an option, so
// that tests and the local stack use the stand-in of telegramfake. Linking chats, updates
// and approval buttons are not built yet (docs/notifications.md).
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/time/rate"
)

// DefaultAPIURL is Telegram's Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// Send limits (Telegram's FAQ): per chat and for the whole bot.
const (
	PerChat = 1  // messages a second to one chat
	PerBot  = 30 // messages a second in all
)

// Options configure a Client.
type Options struct {
	// Token is the bot's token (a Secret's); it is never logged nor put in an error.
	Token string
	// APIURL is the Bot API's address (DefaultAPIURL when "").
	APIURL string
	// HTTPClient makes the calls (a client with a 10-second timeout when nil).
	HTTPClient *http.Client
	// OnUpdate, when set, is handed each update Poll receives (a message to the bot, a
	// button pressed).
	OnUpdate func(ctx context.Context, u *models.Update)
	// PollTimeout is how long one getUpdates call waits for an update (30 s when zero).
	PollTimeout time.Duration
	// Logger, when set, gets the library's own errors (a failed poll) instead of the
	// standard logger's stderr; the library masks the token in them.
	Logger *slog.Logger
}

// Client sends messages. It is safe for concurrent use.
type Client struct {
	b      *bot.Bot
	global *rate.Limiter
	mu     sync.Mutex
	chats  map[int64]*rate.Limiter
	// until is when a 429's wait ends: no message goes before.
	until    time.Time
	onUpdate func(ctx context.Context, u *models.Update)
}

// New is a Client of o's bot. It makes no call.
func New(o Options) (*Client, error) {
	if o.Token == "" {
		return nil, errors.New("telegram: no bot token")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	poll := o.PollTimeout
	if poll <= 0 {
		poll = 30 * time.Second
	}
	hc := o.HTTPClient
	if hc == nil {
		// a long poll holds its call for poll; a send answers within seconds
		hc = &http.Client{Timeout: poll + 10*time.Second}
	}
	opts := []bot.Option{bot.WithServerURL(o.APIURL), bot.WithSkipGetMe(), bot.WithHTTPClient(poll, hc)}
	if l := o.Logger; l != nil {
		opts = append(opts, bot.WithErrorsHandler(func(err error) { l.Warn("telegram", "err", err) }))
	}
	if o.OnUpdate != nil {
		h := o.OnUpdate
		opts = append(opts, bot.WithDefaultHandler(func(ctx context.Context, _ *bot.Bot, u *models.Update) { h(ctx, u) }))
	}
	b, err := bot.New(o.Token, opts...)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return &Client{b: b, global: rate.NewLimiter(PerBot, PerBot), chats: map[int64]*rate.Limiter{}, onUpdate: o.OnUpdate}, nil
}

// RetryAfter is Telegram's 429: nothing more may be sent to it before Wait has passed.
type RetryAfter struct{ Wait time.Duration }

func (e *RetryAfter) Error() string {
	return fmt.Sprintf("telegram: too many requests, retry after %s", e.Wait)
}

// Send sends text to chat, without a sound when silent, and returns the message's ID. It
// first waits for the chat's and the bot's limits (or ctx's end). A 429 is a *RetryAfter,
// and the bot then sends nothing to anyone until its wait has passed.
func (c *Client) Send(ctx context.Context, chat int64, text string, silent bool) (int, error) {
	return c.SendButtons(ctx, chat, text, silent, nil)
}

// Button is an inline keyboard button: its label and the callback data a press sends back
// (1-64 bytes).
type Button struct{ Text, Data string }

// SendButtons is Send with a row of inline buttons under the message (none when empty).
func (c *Client) SendButtons(ctx context.Context, chat int64, text string, silent bool, buttons []Button) (int, error) {
	if err := c.wait(ctx, chat); err != nil {
		return 0, err
	}
	p := &bot.SendMessageParams{ChatID: chat, Text: text, DisableNotification: silent}
	if len(buttons) > 0 {
		p.ReplyMarkup = keyboard(buttons)
	}
	m, err := c.b.SendMessage(ctx, p)
	if err != nil {
		return 0, c.failed("send", err)
	}
	return m.ID, nil
}

func keyboard(buttons []Button) *models.InlineKeyboardMarkup {
	row := make([]models.InlineKeyboardButton, len(buttons))
	for i, b := range buttons {
		row[i] = models.InlineKeyboardButton{Text: b.Text, CallbackData: b.Data}
	}
	return &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{row}}
}

// failed turns a Bot API error into the client's: a 429 stops the whole bot until its wait
// has passed (*RetryAfter).
func (c *Client) failed(call string, err error) error {
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		wait := time.Duration(tooMany.RetryAfter) * time.Second
		c.mu.Lock()
		if end := time.Now().Add(wait); end.After(c.until) {
			c.until = end
		}
		c.mu.Unlock()
		return &RetryAfter{Wait: wait}
	}
	return fmt.Errorf("telegram: %s: %w", call, err)
}

// Edit replaces the text of message id in chat, and removes its buttons.
func (c *Client) Edit(ctx context.Context, chat int64, id int, text string) error {
	if err := c.wait(ctx, chat); err != nil {
		return err
	}
	_, err := c.b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: id, Text: text})
	if err != nil {
		return c.failed("edit", err)
	}
	return nil
}

// Answer answers a button press (the notice the presser sees).
func (c *Client) Answer(ctx context.Context, queryID, text string) error {
	if _, err := c.b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: text}); err != nil {
		return c.failed("answer", err)
	}
	return nil
}

// Poll receives updates by long polling (getUpdates) and hands each to OnUpdate, until ctx
// ends: for a stack with no public address for Telegram's webhook (the local stack).
func (c *Client) Poll(ctx context.Context) error {
	c.b.Start(ctx)
	return nil
}

// wait takes a token of the chat's limiter and of the bot's.
func (c *Client) wait(ctx context.Context, chat int64) error {
	c.mu.Lock()
	l, ok := c.chats[chat]
	if !ok {
		l = rate.NewLimiter(PerChat, 1)
		c.chats[chat] = l
	}
	until := c.until
	c.mu.Unlock()
	if d := time.Until(until); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := l.Wait(ctx); err != nil {
		return turnErr(ctx)
	}
	if err := c.global.Wait(ctx); err != nil {
		return turnErr(ctx)
	}
	return nil
}

// turnErr is why a limiter did not wait: ctx ended, or would end before the turn came.
func turnErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("telegram: the turn to send comes after the deadline: %w", context.DeadlineExceeded)
}
