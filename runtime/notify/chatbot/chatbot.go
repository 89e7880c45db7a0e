// Package chatbot answers what a person does in sigops's Telegram bot: /start <code> links
// the chat to the user whose dashboard made the code (runtime/notify/settings), /stop
// unlinks it, an approval's Approve or Reject button decides it, and from a linked chat
// /status shows the user's bots and /pause <bot> pauses one. A user's telegramLinked
// (check_auth, /api/user/me) follows each link and unlink.
package chatbot

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/sigops/sigops/runtime/notify/settings"
)

// Replies, kept free of anything about the user: a chat sees only what it asked.
const (
	replyLinked   = "This chat is linked to your sigops account. You will get the alerts you chose on the dashboard. Send /stop to unlink it, /status to see your bots, /pause <bot> to pause one."
	replyBadCode  = "That link code is unknown or expired. Get a new link from the dashboard's account page."
	replyNoCode   = "To link this chat, open the dashboard's account page and follow its Telegram link."
	replyStopped  = "This chat is unlinked: it will get no more alerts."
	replyNotKnown = "This chat is not linked to a sigops account."
	replyPrivate  = "sigops sends alerts to private chats only."
)

// Chat is how the bot answers (telegram.Client).
type Chat interface {
	Send(ctx context.Context, chat int64, text string, silent bool) (int, error)
	Edit(ctx context.Context, chat int64, id int, text string) error
	Answer(ctx context.Context, queryID, text string) error
}

// Account is what the linked chat may do on its user's account; each call is audited by
// its implementation as the dashboard's are.
type Account interface {
	// Linked records whether the user has a linked chat (auth.Users.SetTelegramLinked).
	Linked(ctx context.Context, user string, linked bool) error
	// Decide approves or rejects the user's approval of signal, and says the outcome.
	Decide(ctx context.Context, user, signal string, approve bool) (string, error)
	// Status is the user's bots, positions and today's PnL, as text.
	Status(ctx context.Context, user string) (string, error)
	// Pause pauses the user's bot named name (a manual pause) and says so.
	Pause(ctx context.Context, user, name string) (string, error)
}

// Bot answers updates.
type Bot struct {
	Settings *settings.Store
	Account  Account
	Chat     Chat
	Logger   *slog.Logger
}

// Handle answers one update.
func (b *Bot) Handle(ctx context.Context, u *models.Update) {
	if u.CallbackQuery != nil {
		b.press(ctx, u.CallbackQuery)
		return
	}
	m := u.Message
	if m == nil || m.From == nil {
		return
	}
	chat := m.Chat.ID
	if m.Chat.Type != models.ChatTypePrivate {
		b.reply(ctx, chat, replyPrivate)
		return
	}
	cmd, arg, _ := strings.Cut(strings.TrimSpace(m.Text), " ")
	cmd, _, _ = strings.Cut(cmd, "@") // "/start@sigops_bot" in a client that names the bot
	arg = strings.TrimSpace(arg)
	switch cmd {
	case "/start":
		b.start(ctx, chat, arg)
	case "/stop":
		b.stop(ctx, chat)
	case "/status", "/pause":
		b.command(ctx, chat, cmd, arg)
	}
}

func (b *Bot) start(ctx context.Context, chat int64, code string) {
	if code == "" {
		b.reply(ctx, chat, replyNoCode)
		return
	}
	user, err := b.Settings.Link(ctx, code, chat)
	if errors.Is(err, settings.ErrCodeInvalid) {
		b.reply(ctx, chat, replyBadCode)
		return
	}
	if err == nil {
		err = b.Account.Linked(ctx, user, true)
	}
	if err != nil {
		b.Logger.Error("link a Telegram chat", "err", err)
		return
	}
	b.reply(ctx, chat, replyLinked)
}

func (b *Bot) stop(ctx context.Context, chat int64) {
	user, err := b.Settings.UnlinkChat(ctx, chat)
	if err == nil && user != "" {
		err = b.Account.Linked(ctx, user, false)
	}
	if err != nil {
		b.Logger.Error("unlink a Telegram chat", "err", err)
		return
	}
	if user == "" {
		b.reply(ctx, chat, replyNotKnown)
		return
	}
	b.reply(ctx, chat, replyStopped)
}

// command runs /status or /pause for the chat's user; an unlinked chat is told so.
func (b *Bot) command(ctx context.Context, chat int64, cmd, arg string) {
	user, ok, err := b.Settings.ChatUser(ctx, chat)
	if err != nil {
		b.Logger.Error("read a Telegram chat's user", "err", err)
		return
	}
	if !ok {
		b.reply(ctx, chat, replyNotKnown)
		return
	}
	var text string
	switch {
	case cmd == "/status":
		text, err = b.Account.Status(ctx, user)
	case arg == "":
		text = "Name the bot: /pause <bot name>. Resuming is on the dashboard."
	default:
		text, err = b.Account.Pause(ctx, user, arg)
	}
	if err != nil {
		text = "That did not work: " + err.Error()
	}
	b.reply(ctx, chat, text)
}

func (b *Bot) reply(ctx context.Context, chat int64, text string) {
	if _, err := b.Chat.Send(ctx, chat, text, false); err != nil {
		b.Logger.Warn("reply in Telegram", "err", err)
	}
}
