package readapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sigops/sigops/webhookd/readapi"
)

func TestRateLimitPerClientAddress(t *testing.T) {
	f := newFixture(t, func(o *readapi.Options) {
		o.PerIP = readapi.RateLimit{Rate: 3, Period: time.Minute, Burst: 3}
	})
	from := func(ip string) cred { return func(r *http.Request) { r.Header.Set("X-Forwarded-For", ip) } }
	for i := range 3 {
		if r := f.get(t, readapi.OpenAPIPath, from("203.0.113.7")); r.status != http.StatusOK {
			t.Fatalf("request %d: status %d within the burst", i+1, r.status)
		}
	}
	r := f.get(t, readapi.OpenAPIPath, from("203.0.113.7"))
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("4th request: status %d, want 429", r.status)
	}
	var body struct {
		Code string `json:"code"`
	}
	r.decode(t, &body)
	if body.Code != "RATE_LIMITED" {
		t.Fatalf("code %q, want RATE_LIMITED", body.Code)
	}
	// One request per 20 s comes back: Retry-After is the wait until then, in whole seconds.
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 20 {
		t.Fatalf("Retry-After %q, want 1-20 s", r.header.Get("Retry-After"))
	}
	// Another address has its own budget.
	if r := f.get(t, readapi.OpenAPIPath, from("203.0.113.8")); r.status != http.StatusOK {
		t.Fatalf("another address: status %d", r.status)
	}
}
