package trustedproxy_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sigops/sigops/runtime/trustedproxy"
)

// req builds a request from remote carrying each header line as given, in order (several
// lines of one header are what a proxy that adds its own line produces).
func req(remote string, lines ...[2]string) *http.Request {
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = remote
	for _, l := range lines {
		r.Header.Add(l[0], l[1])
	}
	return r
}

func proto(v string) [2]string { return [2]string{"X-Forwarded-Proto", v} }
func xff(v string) [2]string   { return [2]string{"X-Forwarded-For", v} }

func TestParse(t *testing.T) {
	ps, err := trustedproxy.Parse(" 10.0.0.0/8, 127.0.0.1/32 ,")
	if err != nil || len(ps) != 2 {
		t.Fatalf("parse = %v, %v", ps, err)
	}
	if _, err := trustedproxy.Parse("10.0.0.0/33"); err == nil {
		t.Fatal("bad CIDR accepted")
	}
}

func TestOverHTTPS(t *testing.T) {
	ps, _ := trustedproxy.Parse("10.0.0.0/8, 127.0.0.1/32")
	cases := []struct {
		name   string
		remote string
		lines  [][2]string
		want   bool
	}{
		{"proxy says https", "10.1.2.3:5000", [][2]string{proto("https")}, true},
		{"case does not matter", "10.1.2.3:5000", [][2]string{proto("HTTPS")}, true},
		{"proxy says http", "10.1.2.3:5000", [][2]string{proto("http")}, false},
		{"no header", "10.1.2.3:5000", nil, false},
		{"empty header", "10.1.2.3:5000", [][2]string{proto("")}, false},
		// A client sent "https" over plain HTTP and the proxy appended its own "http".
		{"client's https appended to", "10.1.2.3:5000", [][2]string{proto("https, http")}, false},
		{"client's https on its own line", "10.1.2.3:5000", [][2]string{proto("https"), proto("http")}, false},
		{"proxy's https last", "10.1.2.3:5000", [][2]string{proto("http, https")}, true},
		{"proxy's https line last", "10.1.2.3:5000", [][2]string{proto("http"), proto("https")}, true},
		{"not a proxy: header not believed", "192.0.2.7:5000", [][2]string{proto("https")}, false},
		{"IPv4-mapped proxy", "[::ffff:127.0.0.1]:80", [][2]string{proto("https")}, true},
	}
	for _, c := range cases {
		if got := ps.OverHTTPS(req(c.remote, c.lines...)); got != c.want {
			t.Errorf("%s: OverHTTPS = %v, want %v", c.name, got, c.want)
		}
	}
	tlsReq := req("192.0.2.7:5000")
	tlsReq.TLS = &tls.ConnectionState{}
	if !ps.OverHTTPS(tlsReq) {
		t.Error("TLS request refused")
	}
}

func TestClient(t *testing.T) {
	ps, _ := trustedproxy.Parse("10.0.0.0/8")
	cases := []struct {
		name   string
		remote string
		lines  [][2]string
		want   string
	}{
		{"no header: the peer", "10.0.0.1:1", nil, "10.0.0.1"},
		{"one proxy", "10.0.0.1:1", [][2]string{xff("198.51.100.9")}, "198.51.100.9"},
		// The client behind two proxies; a forged left-most entry is ignored.
		{"two proxies, forged left", "10.0.0.1:1", [][2]string{xff("6.6.6.6, 198.51.100.9, 10.0.0.2")}, "198.51.100.9"},
		// A client's own X-Forwarded-For line comes first; the proxy's line is last.
		{"client's own line", "10.0.0.1:1", [][2]string{xff("6.6.6.6"), xff("198.51.100.9")}, "198.51.100.9"},
		{"client's own line, chain of proxies", "10.0.0.1:1", [][2]string{xff("6.6.6.6"), xff("198.51.100.9, 10.0.0.2")}, "198.51.100.9"},
		{"untrusted peer's header not believed", "192.0.2.7:1", [][2]string{xff("6.6.6.6")}, "192.0.2.7"},
		{"IPv6 client", "10.0.0.1:1", [][2]string{xff("2001:db8::1")}, "2001:db8::1"},
	}
	for _, c := range cases {
		a, ok := ps.Client(req(c.remote, c.lines...))
		if !ok || a.String() != c.want {
			t.Errorf("%s: client = %s (%v), want %s", c.name, a, ok, c.want)
		}
	}
}
