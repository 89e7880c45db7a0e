package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/chatbot"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/route"
	"github.com/sigops/sigops/runtime/notify/service"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/telegram"
	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

const notifyToken = "4242:e2e-bot-token"

// phone is a notifyd on the suite's Redis with a Telegram stand-in, and a chat linked to
// one user: where that user's approval requests arrive with their buttons.
type phone struct {
	tg   *telegramfake.Server
	chat int64
}

// startPhone links chat to user and runs notifyd until t ends; approvals decide the
// presses, as notifyd's own approval store would.
func startPhone(t *testing.T, user string, chat int64, approvals *approval.Store) *phone {
	t.Helper()
	tg := telegramfake.Start(notifyToken)
	t.Cleanup(tg.Close)
	set := &settings.Store{DB: dbtest.New(t)}
	ctx, cancel := context.WithCancel(context.Background())
	code, _, err := set.NewLinkCode(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Link(ctx, code, chat); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(rdb)
	acct := &chatbot.Runtime{Users: users, Approvals: approvals, Audit: audit.New(rdb, audit.Options{}), Bots: reg,
		Book: position.NewBook(rdb), Analytics: analytics.New(rdb)}
	logger := slog.New(slog.DiscardHandler)
	cb := &chatbot.Bot{Settings: set, Account: acct, Logger: logger}
	tc, err := telegram.New(telegram.Options{Token: notifyToken, APIURL: tg.URL, OnUpdate: cb.Handle, PollTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cb.Chat = tc
	svc := service.New(service.Options{Redis: rdb, DB: set.DB, Logger: logger, Poll: tc.Poll, Interval: 20 * time.Millisecond,
		Router:    &route.Router{Settings: set, Owner: route.OwnerOf(reg, users)},
		Deliverer: &outbox.Deliverer{DB: set.DB, Sender: &channels.Channels{Settings: set, Telegram: tc, Egress: egress.New(egress.Options{})}}})
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &phone{tg: tg, chat: chat}
}

// request is the approval request whose text holds what, once it arrived.
func (p *phone) request(t *testing.T, what string) telegramfake.Sent {
	t.Helper()
	var got telegramfake.Sent
	testkit.EventuallyTrue(t, 20*time.Second, "the approval request in Telegram", func() bool {
		for _, m := range p.tg.Messages() {
			if m.Chat == p.chat && len(m.Buttons) == 1 && len(m.Buttons[0]) == 2 && strings.Contains(m.Text, "Approval needed") &&
				strings.Contains(m.Text, what) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// press presses button b (0 Approve, 1 Reject) of message m from chat and returns the
// answer the presser saw.
func (p *phone) press(t *testing.T, chat int64, m telegramfake.Sent, b int) string {
	t.Helper()
	text, ok := p.tg.AnswerTo(p.tg.PressButton(chat, m.ID, m.Buttons[0][b].Data), 10*time.Second)
	if !ok {
		t.Fatal("a press was not answered")
	}
	return text
}
