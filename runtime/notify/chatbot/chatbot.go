// Package chatbot answers what a person writes to sigops's Telegram bot: /start <code>
// links the chat to the user whose dashboard made the code (runtime/notify/settings), and
// /stop unlinks it. A user's telegramLinked (check_auth, /api/user/me) follows each change.
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
	replyLinked   = "This chat is linked to your sigops account. You will get the alerts you chose on the dashboard. Send /stop to unlink it."
	replyBadCode  = "That link code is unknown or expired. Get a new link from the dashboard's account page."
	replyNoCode   = "To link this chat, open the dashboard's account page and follow its Telegram link."
	replyStopped  = "This chat is unlinked: it will get no more alerts."
	replyNotKnown = "This chat is not linked to a sigops account."
	replyPrivate  = "sigops sends alerts to private chats only."
)

// Linked records whether a user has a linked chat (auth.Users.SetTelegramLinked).
type Linked func(ctx context.Context, user string, linked bool) error

// Bot answers updates.
type Bot struct {
	Settings *settings.Store
	Linked   Linked
	// Reply sends text to chat.
	Reply  func(ctx context.Context, chat int64, text string) error
	Logger *slog.Logger
}

// Handle answers one update.
func (b *Bot) Handle(ctx context.Context, u *models.Update) {
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
	switch cmd {
	case "/start":
		b.start(ctx, chat, strings.TrimSpace(arg))
	case "/stop":
		b.stop(ctx, chat)
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
		err = b.Linked(ctx, user, true)
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
		err = b.Linked(ctx, user, false)
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

func (b *Bot) reply(ctx context.Context, chat int64, text string) {
	if err := b.Reply(ctx, chat, text); err != nil {
		b.Logger.Warn("reply in Telegram", "err", err)
	}
}
