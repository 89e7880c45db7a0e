package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/settings"
)

var (
	deepLinkRe   = regexp.MustCompile(`https://t\.me/sigops_local_bot\?start=([A-Za-z0-9_-]+)`)
	hookSecretRe = regexp.MustCompile(`value="(whsec_[A-Za-z0-9_-]+)"`)
)

// The Notifications tab links Telegram with a single-use code (shown once), saves the
// events and quiet hours, adds a destination showing its secret once and its host only
// after, sends a signed test, and refuses a private address, each change journaled.
func TestSettingsNotifications(t *testing.T) {
	set := &settings.Store{DB: dbtest.New(t)}
	f := newFixture(t, func(o *authd.Options) {
		o.Notifications = &manage.Manager{Settings: set, Egress: egress.New(egress.Options{LoopbackHTTP: true}), BotUsername: "sigops_local_bot"}
	})
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()

	resp, page := b.submit("/dashboard/settings/notifications/telegram/link", nil)
	code := match(t, deepLinkRe, page)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "/start "+code) {
		t.Fatalf("link: %d\n%s", resp.StatusCode, page)
	}
	if _, again := b.get("/dashboard/settings/notifications"); strings.Contains(again, code) || !strings.Contains(again, "not linked") {
		t.Fatal("the code is shown again, or the chat is linked already")
	}
	if _, err := set.Link(ctx, code, 99); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/dashboard/settings/notifications"); !strings.Contains(page, `badge active">linked`) {
		t.Fatalf("after linking:\n%s", page)
	}

	form := url.Values{"event_fill": {"on"}, "event_bot_paused": {"on"}, "quiet_from": {"22:30"}, "quiet_to": {"07:00"}, "zone": {"Europe/Berlin"},
		"summary_hour": {"18"}}
	if resp, page := b.submit("/dashboard/settings/notifications/preferences", form); resp.StatusCode != http.StatusSeeOther ||
		resp.Header.Get("Location") != "/dashboard/settings/notifications?done=notify-saved" {
		t.Fatalf("preferences: %d\n%s", resp.StatusCode, page)
	}
	p, err := set.Prefs(ctx, u.ID)
	if err != nil || !p.Events[notify.Fill] || p.Events[notify.OrderRefused] || p.Quiet == nil || p.Quiet.From != 22*60+30 || p.Zone != "Europe/Berlin" ||
		p.SummaryHour == nil || *p.SummaryHour != 18 {
		t.Fatalf("saved preferences %+v %v", p, err)
	}

	if _, page := b.submit("/dashboard/settings/notifications/webhooks", url.Values{"url": {"https://169.254.169.254/latest"},
		"format": {"json"}, "event_fill": {"on"}}); !strings.Contains(page, "Nothing was added") {
		t.Fatalf("a metadata address was not refused:\n%s", page)
	}
	got := make(chan http.Header, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Header
	}))
	defer recv.Close()
	_, page = b.submit("/dashboard/settings/notifications/webhooks", url.Values{"url": {recv.URL + "/secret-path"},
		"format": {"json"}, "event_fill": {"on"}})
	secret := match(t, hookSecretRe, page)
	hooks, err := set.Webhooks(ctx, u.ID)
	if err != nil || len(hooks) != 1 || hooks[0].Secret != secret {
		t.Fatalf("destinations %+v %v", hooks, err)
	}
	_, page = b.submit("/dashboard/settings/notifications/webhooks/"+hooks[0].ID+"/test", nil)
	if !strings.Contains(page, "delivered (HTTP 200)") {
		t.Fatalf("test:\n%s", page)
	}
	select {
	case h := <-got:
		if h.Get(egress.SignatureHeader) == "" {
			t.Fatal("the test delivery is not signed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no test delivery")
	}
	if _, page := b.get("/dashboard/settings/notifications"); strings.Contains(page, "secret-path") || strings.Contains(page, secret) {
		t.Fatal("the page shows the destination's path or secret after its creation")
	}
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, e.Tool)
		if strings.Contains(string(e.Arguments), "secret-path") {
			t.Errorf("the journal keeps the URL: %s", e.Arguments)
		}
	}
	if want := "link_telegram set_notification_preferences create_notification_webhook create_notification_webhook"; !strings.Contains(strings.Join(reverse(tools), " "), want) {
		t.Errorf("journal %v", tools)
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
