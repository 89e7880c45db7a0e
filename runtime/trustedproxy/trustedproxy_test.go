package trustedproxy_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sigops/sigops/runtime/trustedproxy"
)

func TestOverHTTPSAndClient(t *testing.T) {
	ps, err := trustedproxy.Parse(" 10.0.0.0/8, 127.0.0.1/32 ,")
	if err != nil || len(ps) != 2 {
		t.Fatalf("parse = %v, %v", ps, err)
	}
	if _, err := trustedproxy.Parse("10.0.0.0/33"); err == nil {
		t.Fatal("bad CIDR accepted")
	}
	req := func(remote, proto, xff string) *http.Request {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = remote
		if proto != "" {
			r.Header.Set("X-Forwarded-Proto", proto)
		}
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return r
	}
	cases := []struct {
		remote, proto string
		want          bool
	}{
		{"10.1.2.3:5000", "https", true},
		{"10.1.2.3:5000", "HTTPS, http", true},
		{"10.1.2.3:5000", "http", false},
		{"10.1.2.3:5000", "", false},
		{"192.0.2.7:5000", "https", false}, // not a proxy: the header is not believed
		{"[::ffff:127.0.0.1]:80", "https", true},
	}
	for _, c := range cases {
		if got := ps.OverHTTPS(req(c.remote, c.proto, "")); got != c.want {
			t.Errorf("%s %q: %v", c.remote, c.proto, got)
		}
	}
	tlsReq := req("192.0.2.7:5000", "", "")
	tlsReq.TLS = &tls.ConnectionState{}
	if !ps.OverHTTPS(tlsReq) {
		t.Error("TLS request refused")
	}

	// The client behind two proxies; a forged left-most entry is ignored.
	a, _ := ps.Client(req("10.0.0.1:1", "", "6.6.6.6, 198.51.100.9, 10.0.0.2"))
	if a.String() != "198.51.100.9" {
		t.Errorf("client = %s", a)
	}
	a, _ = ps.Client(req("192.0.2.7:1", "", "6.6.6.6"))
	if a.String() != "192.0.2.7" {
		t.Errorf("untrusted peer's XFF believed: %s", a)
	}
}
