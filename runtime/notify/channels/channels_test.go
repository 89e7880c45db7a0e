package channels_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// A destination that keeps failing is turned off once it has failed for a day, the user is
// told once (the Disabled hook), and nothing more is sent to it; a success in between
// starts the day again.
func TestFailingDestinationIsDisabledAfterADay(t *testing.T) {
	ctx := context.Background()
	clk := testkit.NewClock(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	set := &settings.Store{DB: dbtest.New(t), Now: clk.Now}
	status := http.StatusInternalServerError
	hits := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++; w.WriteHeader(status) }))
	defer recv.Close()
	eg := egress.New(egress.Options{LoopbackHTTP: true})
	w, err := set.CreateWebhook(ctx, "u1", recv.URL+"/token-in-path", settings.FormatSlack, []notify.Kind{notify.Fill}, eg.Check)
	if err != nil {
		t.Fatal(err)
	}
	var told []settings.Webhook
	ch := &channels.Channels{Settings: set, Egress: eg, Now: clk.Now,
		Disabled: func(_ context.Context, w settings.Webhook) { told = append(told, w) }}
	m := notify.Message{Events: []notify.Event{{ID: "e1", Kind: notify.Fill, Bot: "b", Symbol: "BTC/USDT", Side: "buy"}}}
	send := func() (string, error) { return ch.Send(ctx, "u1", outbox.WebhookChannel(w.ID), m) }

	if _, err := send(); err == nil || strings.Contains(err.Error(), "token-in-path") {
		t.Fatalf("a 500 is not a failure, or the error quotes the path: %v", err)
	}
	clk.Advance(23 * time.Hour)
	status = http.StatusOK
	if st, err := send(); err != nil || st != "HTTP 200" {
		t.Fatalf("a success: %q %v", st, err)
	}
	status = http.StatusInternalServerError
	clk.Advance(2 * time.Hour) // failing again from here: the day starts now
	if _, err := send(); err == nil || len(told) != 0 {
		t.Fatalf("disabled %d hours after a success", 2)
	}
	clk.Advance(outbox.MaxAge)
	if _, err := send(); err == nil || len(told) != 1 || told[0].ID != w.ID {
		t.Fatalf("after a day of failures: told %v, err %v", told, err)
	}
	before := hits
	var gone *outbox.Gone
	if _, err := send(); !errors.As(err, &gone) || gone.Status != "disabled" || hits != before {
		t.Fatalf("a disabled destination: %v, %d more requests", err, hits-before)
	}
	if err := set.EnableWebhook(ctx, "u1", w.ID); err != nil {
		t.Fatal(err)
	}
	status = http.StatusOK
	if st, err := send(); err != nil || st != "HTTP 200" {
		t.Fatalf("turned on again: %q %v", st, err)
	}
}
