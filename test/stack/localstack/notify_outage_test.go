package localstack

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/test/load"
)

// TestNotifyOutage is the notifications' load figure (docs/benchmarks.md, "Notifications
// under a channel outage"), not part of `make test`: SIGOPS_NOTIFY_OUTAGE=5m runs it with
// that outage. It starts the stack, links the demo account's chat, and sends 200 signals a
// second to 20 of its bots twice for the outage's length: first with fills not notified
// (the reference), then with every fill notified and Telegram down throughout. It reports
// both runs' p99 fill latency and fails when the second is more than 10 % slower, then
// brings Telegram back and checks that every fill was delivered once, gathered into one
// message per bot and thousand fills.
func TestNotifyOutage(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SIGOPS_NOTIFY_OUTAGE"))
	if err != nil || d <= 0 {
		t.Skip("set SIGOPS_NOTIFY_OUTAGE to the outage's length (5m) to run the notifications' load figure")
	}
	ctx := t.Context()
	s := StartForTest(ctx, t, Options{})
	fleet, err := load.Setup(ctx, s.Client, load.SetupOptions{Bots: 20, Owner: DemoEmail, Balance: "100000000"})
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(s.CertFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 30 * time.Second}
	runner, err := load.NewRunner(load.Target{BaseURL: s.BaseURL(), RootCAs: roots}, fleet.Paths())
	if err != nil {
		t.Fatal(err)
	}
	token := demoToken(t, s, hc)
	linkDemoChat(t, s, hc, token)
	scenario := func(name string) load.Scenario {
		return load.Scenario{Name: name, Rate: 200, Duration: d, Connections: 64, Wait: true}
	}

	base, err := runner.Run(ctx, scenario("fills not notified"))
	if err != nil {
		t.Fatal(err)
	}
	setFills(t, s, hc, token, true)
	s.Telegram().SetDown(true)
	down, err := runner.Run(ctx, scenario("every fill notified, Telegram down"))
	if err != nil {
		t.Fatal(err)
	}
	p99, p99Down := base.Percentile(0.99), down.Percentile(0.99)
	t.Logf("reference: %d sent, %.0f/s, p50 %s p99 %s; Telegram down: %d sent, %.0f/s, p50 %s p99 %s (ratio %.3f)",
		base.Sent, base.Throughput(), base.Percentile(0.5), p99, down.Sent, down.Throughput(), down.Percentile(0.5), p99Down,
		float64(p99Down)/float64(p99))
	if p99Down > p99+p99/10 {
		t.Errorf("with Telegram down the fills' p99 is %s, more than 10 %% over the reference's %s", p99Down, p99)
	}

	db, err := pgxpool.New(ctx, s.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Every fill is queued before Telegram is back (notifyd reads as the fills happen, and
	// may trail them by a moment under load), so that each bot's fills make one message.
	fills := 0
	for _, a := range down.Answers {
		if a.Outcome == "200 filled" {
			fills++
		}
	}
	count := func(sql string) int {
		var n int
		if err := db.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); count(`SELECT count(*) FROM notify_outbox WHERE channel = 'telegram' AND event->>'kind' = 'fill'`) < fills; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("notifyd queued fewer than the %d fills a minute after the run", fills)
		}
	}
	before := len(s.Telegram().Messages())
	s.Telegram().SetDown(false)
	recovered := time.Now()
	var queued, sent, merged int
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Second) {
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'sent'),
			count(*) FILTER (WHERE state = 'merged') FROM notify_outbox WHERE channel = 'telegram' AND event->>'kind' = 'fill'`).
			Scan(&queued, &sent, &merged); err != nil {
			t.Fatal(err)
		}
		if queued == 0 && sent > 0 || time.Now().After(deadline) {
			break
		}
	}
	msgs := s.Telegram().Messages()[before:]
	perBot := map[string]int{}
	for _, m := range msgs {
		if name, _, ok := strings.Cut(strings.TrimPrefix(m.Text, "Bot "), ":"); ok && strings.Contains(m.Text, "fills in the last minute") {
			perBot[name]++
		}
	}
	t.Logf("after recovery: %d fills queued as %d messages (%d gathered) in %s; %d still pending; %d bots told",
		sent+merged, len(msgs), merged, time.Since(recovered).Round(time.Second), queued, len(perBot))
	if queued != 0 || sent+merged != fills {
		t.Errorf("%d fills answered, %d delivered (%d pending)", fills, sent+merged, queued)
	}
	// One gathered message per bot, of at most 1,000 fills each (docs/notifications.md,
	// "Bursts"): a bot with more gets the rest a window later.
	filled := map[string]int{}
	for _, a := range down.Answers {
		if a.Outcome == "200 filled" {
			filled[fleet.Bots[a.Bot].Name]++
		}
	}
	for bot, n := range filled {
		if want := (n + 999) / 1000; perBot[bot] != want {
			t.Errorf("bot %s: %d fills in %d gathered messages after the outage, want %d", bot, n, perBot[bot], want)
		}
	}
	if len(msgs) != sent {
		t.Errorf("%d messages arrived for %d sent rows", len(msgs), sent)
	}
}
