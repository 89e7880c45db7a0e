package notify_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
)

func num(s string) httpapi.Number   { return httpapi.Num(decimal.RequireFromString(s)) }
func numP(s string) *httpapi.Number { n := num(s); return &n }

// A user who chose nothing hears what they must know and not every fill; a choice for all
// bots overrides the default, a choice for one bot overrides that.
func TestWants(t *testing.T) {
	for _, k := range notify.Kinds {
		want := k != notify.Fill && k != notify.DailySummary
		if got := (notify.Prefs{}).Wants(notify.Event{Kind: k, BotID: "b"}); got != want {
			t.Errorf("default %s: %v, want %v", k, got, want)
		}
	}
	if (notify.Prefs{}).Wants(notify.Event{Kind: "nonsense"}) {
		t.Error("an unknown kind reaches the user")
	}
	p := notify.Prefs{Events: map[notify.Kind]bool{notify.Fill: true, notify.BotPaused: false},
		Bots: map[string]map[notify.Kind]bool{"quiet-bot": {notify.Fill: false}}}
	for _, c := range []struct {
		e    notify.Event
		want bool
	}{
		{notify.Event{Kind: notify.Fill, BotID: "b"}, true},
		{notify.Event{Kind: notify.Fill, BotID: "quiet-bot"}, false},
		{notify.Event{Kind: notify.BotPaused, BotID: "quiet-bot"}, false},
		{notify.Event{Kind: notify.OrderRefused, BotID: "quiet-bot"}, true},
		{notify.Event{Kind: notify.ConnectionInvalid}, true},
	} {
		if got := p.Wants(c.e); got != c.want {
			t.Errorf("%s of %q: %v, want %v", c.e.Kind, c.e.BotID, got, c.want)
		}
	}
}

// Quiet hours are read in the user's zone, may span midnight, and never hush an approval
// request.
func TestSilent(t *testing.T) {
	p := notify.Prefs{Quiet: &notify.Quiet{From: 22 * 60, To: 7 * 60}, Zone: "Europe/Paris"}
	paris, _ := time.LoadLocation("Europe/Paris")
	fill := notify.Event{Kind: notify.Fill}
	for clock, want := range map[string]bool{"21:59": false, "22:00": true, "23:30": true, "03:00": true, "06:59": true, "07:00": false, "12:00": false} {
		at, _ := time.ParseInLocation("2006-01-02 15:04", "2026-12-07 "+clock, paris)
		if got := p.Silent(fill, at.UTC()); got != want {
			t.Errorf("%s Paris: silent %v, want %v", clock, got, want)
		}
	}
	night, _ := time.ParseInLocation("2006-01-02 15:04", "2026-12-07 23:30", paris)
	if p.Silent(notify.Event{Kind: notify.ApprovalRequested}, night) {
		t.Error("an approval request was hushed")
	}
	day := notify.Prefs{Quiet: &notify.Quiet{From: 9 * 60, To: 17 * 60}}
	if !day.Silent(fill, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)) || day.Silent(fill, time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)) {
		t.Error("quiet hours within a day, in UTC")
	}
	if (notify.Prefs{}).Silent(fill, night) {
		t.Error("silent without quiet hours")
	}
}

func TestValidate(t *testing.T) {
	h24, h9 := 24, 9
	if err := (notify.Prefs{Events: map[notify.Kind]bool{notify.Fill: true}, Quiet: &notify.Quiet{From: 0, To: 1439},
		SummaryHour: &h9, Zone: "America/New_York"}).Validate(); err != nil {
		t.Fatalf("valid prefs: %v", err)
	}
	err := (notify.Prefs{Events: map[notify.Kind]bool{"x": true}, Bots: map[string]map[notify.Kind]bool{"b": {"y": true}},
		Quiet: &notify.Quiet{From: -1, To: 1440}, SummaryHour: &h24, Zone: "Mars/Base"}).Validate()
	for _, want := range []string{`unknown event "x"`, `bot b: unknown event "y"`, "quiet hours", "summary hour", "time zone"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

// A hundred fills of one bot in a minute are two messages: the first at once, the other 99
// together when the window ends; another bot's and another kind's go on their own; an
// approval request always goes at once, alone.
func TestBurst(t *testing.T) {
	var b notify.Burst
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var now []notify.Message
	for i := range 100 {
		e := notify.Event{ID: fmt.Sprintf("f%03d", i), Kind: notify.Fill, User: "u", BotID: "b1", Bot: "b1", Side: "buy",
			Amount: num("1"), Price: num("10"), Symbol: "BTC/USDT"}
		if i%2 == 1 {
			e.Side, e.PnL = "sell", numP("0.5")
		}
		if m := b.Add(e, t0.Add(time.Duration(i)*500*time.Millisecond)); m != nil {
			now = append(now, *m)
		}
	}
	if m := b.Add(notify.Event{ID: "p1", Kind: notify.BotPaused, User: "u", BotID: "b1", Bot: "b1"}, t0.Add(10*time.Second)); m == nil {
		t.Fatal("the first pause waited")
	}
	if m := b.Add(notify.Event{ID: "f-b2", Kind: notify.Fill, User: "u", BotID: "b2", Bot: "b2"}, t0.Add(10*time.Second)); m == nil {
		t.Fatal("another bot's first fill waited")
	}
	for i := range 3 {
		if m := b.Add(notify.Event{ID: fmt.Sprint("a", i), Kind: notify.ApprovalRequested, User: "u", BotID: "b1"}, t0.Add(20*time.Second)); m == nil || len(m.Events) != 1 {
			t.Fatalf("approval %d: %+v", i, m)
		}
	}
	if len(now) != 1 || now[0].Events[0].ID != "f000" {
		t.Fatalf("sent at once: %+v", now)
	}
	if due := b.Due(t0.Add(59 * time.Second)); len(due) != 0 {
		t.Fatalf("due before the window ended: %+v", due)
	}
	due := b.Due(t0.Add(time.Minute))
	if len(due) != 1 || len(due[0].Events) != 99 || due[0].Events[0].ID != "f001" || due[0].Events[98].ID != "f099" {
		t.Fatalf("due at the window's end: %d messages", len(due))
	}
	if got, want := notify.Text(due[0]), "Bot b1: 99 fills in the last minute, realised PnL +25 over 50 exits; last: sold 1 BTC/USDT at 10, realised PnL +0.5"; got != want {
		t.Fatalf("gathered text %q\nwant %q", got, want)
	}
	// After the window, the next fill opens a new one and goes at once.
	if m := b.Add(notify.Event{ID: "f100", Kind: notify.Fill, User: "u", BotID: "b1"}, t0.Add(61*time.Second)); m == nil {
		t.Fatal("the first fill of a new window waited")
	}
}

// Every kind reads as a sentence built from its fields.
func TestText(t *testing.T) {
	exp := time.Date(2026, 12, 7, 12, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		e    notify.Event
		want string
	}{
		{notify.Event{Kind: notify.Fill, Bot: "grid-1", Side: "buy", Amount: num("0.01538"), Symbol: "BTC/USDT", Price: num("65000")},
			"Bot grid-1 bought 0.01538 BTC/USDT at 65000"},
		{notify.Event{Kind: notify.Fill, Bot: "grid-1", Side: "sell", Amount: num("0.01538"), Symbol: "BTC/USDT", Price: num("65100"), PnL: numP("-1.9994")},
			"Bot grid-1 sold 0.01538 BTC/USDT at 65100, realised PnL -1.9994"},
		{notify.Event{Kind: notify.OrderRefused, Bot: "grid-1", Side: "buy", Symbol: "ETH/USDT", Reason: "INSUFFICIENT_BALANCE"},
			"Bot grid-1: a buy order for ETH/USDT was refused (INSUFFICIENT_BALANCE: not enough balance)"},
		{notify.Event{Kind: notify.SignalDeadLettered, Bot: "grid-1", Attempts: 15, Reason: "EXCHANGE_UNAVAILABLE"},
			"Bot grid-1: a signal was given up after 15 attempts (EXCHANGE_UNAVAILABLE)"},
		{notify.Event{Kind: notify.SignalExpired, Bot: "grid-1"}, "Bot grid-1: a signal arrived too late and was not executed"},
		{notify.Event{Kind: notify.BotPaused, Bot: "grid-1", Reason: "Risk"}, "Bot grid-1 paused: its daily loss or consecutive-loss limit was reached"},
		{notify.Event{Kind: notify.BotResumed, Bot: "grid-1"}, "Bot grid-1 resumed"},
		{notify.Event{Kind: notify.ConnectionInvalid, Connection: "binance-main", Reason: "WithdrawEnabled"},
			"Connection binance-main stopped working: its API key can withdraw funds, which sigops refuses"},
		{notify.Event{Kind: notify.ApprovalRequested, App: "Claude", Bot: "grid-1", Side: "buy", Amount: num("0.1"), Symbol: "BTC/USDT", Expires: exp},
			"Approval needed: Claude wants to buy 0.1 BTC/USDT on grid-1 (expires 12:30 UTC)"},
		{notify.Event{Kind: notify.ApprovalDecided, App: "Claude", Bot: "grid-1", Reason: "approved"}, "Claude's order on grid-1: approved"},
	} {
		if got := notify.Text(notify.Message{Events: []notify.Event{c.e}}); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.e.Kind, got, c.want)
		}
	}
}

// Slack's text is escaped, Discord's mentions are off and its content is cut to 2,000
// characters, and the JSON format carries the events (with their IDs) but not the user.
func TestFormats(t *testing.T) {
	m := notify.Message{Events: []notify.Event{{ID: "ev-1", Kind: notify.BotPaused, User: "ada@example.com", BotID: "b-1", Bot: "a<b>&c", Reason: "Manual"}}}
	slack, _ := notify.Slack(m)
	if !strings.Contains(string(slack), `Bot a\u0026lt;b\u0026gt;\u0026amp;c paused`) {
		t.Errorf("slack %s", slack)
	}
	discord, _ := notify.Discord(m)
	if !strings.Contains(string(discord), `"allowed_mentions":{"parse":[]}`) {
		t.Errorf("discord %s", discord)
	}
	long := notify.Message{Events: []notify.Event{{Kind: notify.BotPaused, Bot: strings.Repeat("é", 2500)}}}
	d, _ := notify.Discord(long)
	var body struct{ Content string }
	if err := json.Unmarshal(d, &body); err != nil || len([]rune(body.Content)) != 2000 {
		t.Errorf("discord content of %d characters, %v", len([]rune(body.Content)), err)
	}
	js, _ := notify.JSON(m)
	if !strings.Contains(string(js), `"id":"ev-1"`) || !strings.Contains(string(js), `"kind":"bot_paused"`) || strings.Contains(string(js), "ada@") {
		t.Errorf("json %s", js)
	}
}

// No message in any format holds what an event does not show: the user it is for is never
// in it, whatever the kind. (An Event has no field for a key, a secret, a token or a URL.)
func TestNoUserInAnyMessage(t *testing.T) {
	for _, k := range notify.Kinds {
		e := notify.Event{ID: "id", Kind: k, User: "secret-user@example.com", BotID: "b", Bot: "b", Connection: "c",
			Symbol: "BTC/USDT", Side: "buy", Amount: num("1"), Price: num("2"), PnL: numP("3"), Reason: "Manual",
			Attempts: 2, App: "app", Expires: time.Unix(1795262400, 0)}
		m := notify.Message{Events: []notify.Event{e, e}}
		slack, _ := notify.Slack(m)
		discord, _ := notify.Discord(m)
		js, _ := notify.JSON(m)
		for _, out := range []string{notify.Text(m), string(slack), string(discord), string(js)} {
			if strings.Contains(out, "secret-user") {
				t.Errorf("%s: %s", k, out)
			}
		}
	}
}
