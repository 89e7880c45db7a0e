package chatbot_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/notify/chatbot"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// chat records what the bot says.
type chat struct {
	mu   sync.Mutex
	sent map[int64][]string
}

func (c *chat) Send(_ context.Context, id int64, text string, _ bool) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[id] = append(c.sent[id], text)
	return len(c.sent[id]), nil
}
func (c *chat) Edit(context.Context, int64, int, string) error { return nil }
func (c *chat) Answer(context.Context, string, string) error   { return nil }

func (c *chat) last(id int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sent[id]) == 0 {
		return ""
	}
	return c.sent[id][len(c.sent[id])-1]
}

func message(chatID int64, text string) *models.Update {
	return &models.Update{Message: &models.Message{Chat: models.Chat{ID: chatID, Type: models.ChatTypePrivate},
		From: &models.User{ID: chatID}, Text: text}}
}

// From its linked chat a user links, sees their bots (/status), pauses one by name
// (journaled, a Manual pause) and unlinks; an unlinked chat is told it is not linked and
// changes nothing; a group is refused.
func TestCommandsFromTheLinkedChatOnly(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	users := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF})
	u, err := users.Create(ctx, auth.NewUser{Email: "ada@example.com", Name: "Ada", Password: "correct horse battery staple", Tier: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(rdb)
	for _, name := range []string{"grid-btc", "dca-eth"} {
		if err := reg.Project(ctx, registry.Bot{ID: "uid-" + name, Namespace: "ns", Name: name, Owner: "ada@example.com", Market: "spot",
			PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}, registry.HashWebhookID("11111111-1111-4111-8111-1111111111"+name[:2])); err != nil {
			t.Fatal(err)
		}
	}
	accounts := paper.NewAccounts(rdb)
	if _, err := accounts.Ensure(ctx, paper.Config{ID: "acct-1", Namespace: "ns", Name: "ada-paper", Owner: "ada@example.com",
		Currency: "USDT", InitialBalance: decimal.RequireFromString("10000.5"), FeeRate: decimal.RequireFromString("0.001")}); err != nil {
		t.Fatal(err)
	}
	journal := audit.New(rdb, audit.Options{})
	set := &settings.Store{DB: dbtest.New(t)}
	c := &chat{sent: map[int64][]string{}}
	b := &chatbot.Bot{Settings: set, Chat: c, Logger: slog.New(slog.DiscardHandler), Account: &chatbot.Runtime{Users: users, Audit: journal,
		Bots: reg, Book: position.NewBook(rdb), Analytics: analytics.New(rdb), Paper: accounts}}

	b.Handle(ctx, message(7, "/pause grid-btc"))
	if p, _ := reg.ReadPause(ctx, "uid-grid-btc", testNow()); p != nil || !strings.Contains(c.last(7), "not linked") {
		t.Fatalf("an unlinked chat paused a bot (%v) or was not told: %q", p, c.last(7))
	}
	code, _, err := set.NewLinkCode(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.Handle(ctx, message(7, "/start "+code))
	if !strings.Contains(c.last(7), "is linked") {
		t.Fatalf("start: %q", c.last(7))
	}
	if got, _ := users.Get(ctx, u.ID); !got.TelegramLinked {
		t.Fatal("telegramLinked is still false")
	}
	b.Handle(ctx, message(7, "/pause grid-btc"))
	if p, _ := reg.ReadPause(ctx, "uid-grid-btc", testNow()); p == nil || p.Reason != registry.PauseManual || !strings.Contains(c.last(7), "grid-btc is paused") {
		t.Fatalf("pause: %v, %q", p, c.last(7))
	}
	b.Handle(ctx, message(7, "/pause no-such-bot"))
	if !strings.Contains(c.last(7), "no bot named no-such-bot") {
		t.Fatalf("pause of an unknown bot: %q", c.last(7))
	}
	b.Handle(ctx, message(7, "/status"))
	if s := c.last(7); !strings.Contains(s, "• dca-eth (active): 0") || !strings.Contains(s, "• grid-btc (paused: Manual): 0") ||
		!strings.Contains(s, "Paper account ada-paper: 10000.5 USDT free") {
		t.Fatalf("status:\n%s", s)
	}
	entries, _, err := journal.List(ctx, u.ID, "", 10)
	if err != nil || len(entries) != 2 || entries[1].Tool != "pause_bot" || entries[1].Channel != audit.ChannelTelegram || !entries[1].Outcome.OK ||
		entries[0].Outcome.OK {
		t.Fatalf("journal %+v %v", entries, err)
	}
	group := message(8, "/status")
	group.Message.Chat.Type = models.ChatTypeGroup
	b.Handle(ctx, group)
	if !strings.Contains(c.last(8), "private chats only") {
		t.Fatalf("group: %q", c.last(8))
	}
	b.Handle(ctx, message(7, "/stop"))
	if got, _ := users.Get(ctx, u.ID); got.TelegramLinked || !strings.Contains(c.last(7), "unlinked") {
		t.Fatalf("stop: linked %v, %q", got.TelegramLinked, c.last(7))
	}
}

func testNow() time.Time { return time.Now() }
