package chatbot

import (
	"context"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/sigops/sigops/runtime/notify/channels"
)

// press decides an approval by its button: only a press from the chat its message went to,
// linked to the approval's user, once, before it expires (settings.Press); anything else
// is answered and changes nothing. The message is then edited to show the outcome, without
// its buttons.
func (b *Bot) press(ctx context.Context, q *models.CallbackQuery) {
	approve := strings.HasPrefix(q.Data, channels.ButtonApprove)
	token, ok := strings.CutPrefix(q.Data, channels.ButtonApprove)
	if !ok {
		token, ok = strings.CutPrefix(q.Data, channels.ButtonReject)
	}
	if !ok || q.Message.Message == nil && q.Message.InaccessibleMessage == nil {
		b.answer(ctx, q.ID, "This button is not known.")
		return
	}
	chat := q.From.ID
	btn, err := b.Settings.Press(ctx, token, chat)
	if err != nil {
		b.answer(ctx, q.ID, sentence(err.Error()))
		return
	}
	outcome, err := b.Account.Decide(ctx, btn.User, btn.Signal, approve)
	if err != nil {
		outcome = "not decided: " + err.Error()
	}
	b.answer(ctx, q.ID, sentence(outcome))
	text := "Decided."
	if m := q.Message.Message; m != nil && m.Text != "" {
		text = m.Text
	}
	if btn.Message != 0 {
		if err := b.Chat.Edit(ctx, btn.Chat, btn.Message, text+"\n\n"+sentence(outcome)); err != nil {
			b.Logger.Warn("edit an approval's message", "err", err)
		}
	}
}

func (b *Bot) answer(ctx context.Context, id, text string) {
	if err := b.Chat.Answer(ctx, id, text); err != nil {
		b.Logger.Warn("answer a button press", "err", err)
	}
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
