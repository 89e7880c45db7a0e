package egress_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/egress"
)

// Destinations that reach what a user must not are refused when saved: private, loopback
// (by address or by a name that resolves to it), link-local with the metadata address,
// IPv4-mapped loopback; so are URLs that are not https, carry credentials or are not
// absolute. A public address passes.
func TestCheckRefusesWhatIsNotPublic(t *testing.T) {
	c := egress.New(egress.Options{})
	ctx := context.Background()
	for _, u := range []string{
		"https://10.0.0.1/hook", "https://192.168.1.5/hook", "https://172.16.0.1/hook",
		"https://169.254.169.254/latest/meta-data/", "https://127.0.0.1/hook", "https://localhost:8443/hook",
		"https://[::1]/hook", "https://[::ffff:127.0.0.1]/hook", "https://[fe80::1]/hook", "https://0.0.0.0/hook",
		"https://100.64.0.1/hook", "https://224.0.0.1/hook",
		"http://8.8.8.8/hook", "https://user:pass@8.8.8.8/hook", "ftp://8.8.8.8/hook", "/relative", "https://8.8.8.8/hook#frag",
	} {
		if err := c.Check(ctx, u); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	for _, u := range []string{"https://8.8.8.8/hook", "https://1.1.1.1:8443/services/T000/B000/xyz", "https://[2606:4700:4700::1111]/hook"} {
		if err := c.Check(ctx, u); err != nil {
			t.Errorf("%s: %v, want allowed", u, err)
		}
	}
}

// The local stack's option lets plain http through to the loopback interface, and nothing
// else that production refuses.
func TestLoopbackHTTPAllowsTheLoopbackOnly(t *testing.T) {
	c := egress.New(egress.Options{LoopbackHTTP: true})
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/hook", "https://127.0.0.1/hook"} {
		if err := c.Check(ctx, u); err != nil {
			t.Errorf("%s: %v, want allowed", u, err)
		}
	}
	for _, u := range []string{"http://8.8.8.8/hook", "https://10.0.0.1/hook", "https://169.254.169.254/"} {
		if err := c.Check(ctx, u); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
}

// A production client refuses at the connection a name that resolves to a refused address
// (what DNS rebinding would do after Check), and its error names the host only, never the
// path, which may hold a receiver's token.
func TestPostRefusesAtTheConnection(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := egress.New(egress.Options{})
	_, err := c.Post(context.Background(), "https://localhost:"+port+"/hooks/secret-token-123", nil, []byte("{}"))
	if !errors.Is(err, egress.ErrRefused) || strings.Contains(err.Error(), "secret-token-123") {
		t.Fatalf("error %v: want refused, without the path", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the receiver was reached")
	}
}

// A delivery carries its body and headers; a redirect is answered, not followed; a large
// answer is read to MaxBody; a slow receiver costs at most Timeout.
func TestPost(t *testing.T) {
	ctx := context.Background()
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer target.Close()
	var got []byte
	var sig string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		sig = r.Header.Get(egress.SignatureHeader)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target.URL, http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("x"), 200<<10)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := egress.New(egress.Options{LoopbackHTTP: true, Timeout: 300 * time.Millisecond})

	h := http.Header{}
	h.Set(egress.SignatureHeader, "t=1,v1=ab")
	r, err := c.Post(ctx, srv.URL+"/ok", h, []byte(`{"event":"fill"}`))
	if err != nil || r.Status != http.StatusNoContent || !r.OK() || string(got) != `{"event":"fill"}` || sig != "t=1,v1=ab" {
		t.Fatalf("ok: %+v %v; received %q with %q", r, err, got, sig)
	}
	r, err = c.Post(ctx, srv.URL+"/redirect", nil, nil)
	if err != nil || r.Status != http.StatusFound || r.OK() || followed.Load() != 0 {
		t.Fatalf("redirect: %+v %v, followed %d", r, err, followed.Load())
	}
	r, err = c.Post(ctx, srv.URL+"/big", nil, nil)
	if err != nil || len(r.Body) != egress.DefaultMaxBody {
		t.Fatalf("big: %d bytes read, %v; want %d", len(r.Body), err, egress.DefaultMaxBody)
	}
	start := time.Now()
	if _, err = c.Post(ctx, srv.URL+"/slow", nil, nil); err == nil || time.Since(start) > time.Second {
		t.Fatalf("slow: %v after %s, want a timeout after 300 ms", err, time.Since(start))
	}
}

// Sign is HMAC-SHA256 of "<t>.<body>": the value below was computed independently (Python's
// hmac module) from the same secret, time and body.
func TestSignIsTheDocumentedHMAC(t *testing.T) {
	got := egress.Sign([]byte("whsec_test"), time.Unix(1795262400, 0), []byte(`{"event":"fill"}`))
	if want := "t=1795262400,v1=b1803a8efb2f18201c2b4aced9a874c8ae10c8a53bcb8c8a2fac1ea6bdd680b0"; got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}

// Verify accepts what Sign made within the tolerance and refuses a changed body, another
// secret, an old time and a malformed header; of two v1 values one matching is enough.
func TestVerify(t *testing.T) {
	secret, err := egress.NewSecret()
	if err != nil || !strings.HasPrefix(secret, "whsec_") || len(secret) < 40 {
		t.Fatalf("secret %q, %v", secret, err)
	}
	now := time.Unix(1795262400, 0)
	body := []byte(`{"event":"pause","botId":"b-1"}`)
	h := egress.Sign([]byte(secret), now, body)
	if err := egress.Verify([]byte(secret), h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		at             time.Time
		want           error
	}{
		"changed body":    {secret, h, []byte(`{"event":"pause","botId":"b-2"}`), now, egress.ErrBadSignature},
		"other secret":    {secret + "x", h, body, now, egress.ErrBadSignature},
		"ten minutes on":  {secret, h, body, now.Add(10 * time.Minute), egress.ErrStale},
		"from the future": {secret, h, body, now.Add(-10 * time.Minute), egress.ErrStale},
		"no time":         {secret, "v1=00", body, now, egress.ErrMalformed},
		"no signature":    {secret, fmt.Sprintf("t=%d", now.Unix()), body, now, egress.ErrMalformed},
		"garbage":         {secret, "nonsense", body, now, egress.ErrMalformed},
	} {
		if err := egress.Verify([]byte(c.secret), c.header, c.body, c.at, 5*time.Minute); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	two := fmt.Sprintf("t=%d,v1=%064d,%s", now.Unix(), 0, h[strings.Index(h, "v1="):])
	if err := egress.Verify([]byte(secret), two, body, now, 5*time.Minute); err != nil {
		t.Fatalf("two signatures, one right: %v", err)
	}
}
