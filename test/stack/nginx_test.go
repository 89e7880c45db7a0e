package stack

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/trustedproxy"
)

// TestNginxForwardedHeaders runs the local stack's real nginx in front of a real upstream
// and checks the headers arrive the way trustedproxy's rule expects of a proxy: the scheme
// set by nginx (anything the client sent dropped), the peer appended to X-Forwarded-For.
func TestNginxForwardedHeaders(t *testing.T) {
	if _, err := NginxPath(); err != nil {
		t.Skip(err)
	}
	proxies, _ := trustedproxy.Parse("127.0.0.1/32")
	type seen struct {
		Proto, For []string
		HTTPS      bool
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(seen{r.Header.Values("X-Forwarded-Proto"), r.Header.Values("X-Forwarded-For"), proxies.OverHTTPS(r)})
	}))
	defer upstream.Close()

	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := SelfSignedCert(cert, key); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	port2, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// A second origin on its own port routes another prefix to the same upstream.
	listen2 := net.JoinHostPort("127.0.0.1", strconv.Itoa(port2))
	n, err := StartNginx(context.Background(), NginxOptions{Listen: listen, Dir: dir, CertFile: cert, KeyFile: key,
		Routes:  map[string]string{"/echo": upstream.Listener.Addr().String()},
		Origins: []NginxOrigin{{Listen: listen2, Routes: map[string]string{"/mcp": upstream.Listener.Addr().String()}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(5 * time.Second)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, c := range []struct {
		url    string
		status int
	}{{"https://" + listen2 + "/mcp", 200}, {"https://" + listen2 + "/echo", 404}, {"https://" + listen + "/mcp", 404}} {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got seen
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.status == 200 && !got.HTTPS) {
			t.Errorf("%s: status %d (HTTPS upstream %v), want %d", c.url, resp.StatusCode, got.HTTPS, c.status)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+listen+"/echo", nil)
	req.Header.Add("X-Forwarded-Proto", "http")
	req.Header.Add("X-Forwarded-Proto", "gopher")
	req.Header.Set("X-Forwarded-For", "6.6.6.6")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got seen
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if len(got.Proto) != 1 || got.Proto[0] != "https" || !got.HTTPS {
		t.Errorf("X-Forwarded-Proto upstream = %q (HTTPS %v); want nginx's own \"https\" only", got.Proto, got.HTTPS)
	}
	if len(got.For) != 1 || got.For[0] != "6.6.6.6, 127.0.0.1" {
		t.Errorf("X-Forwarded-For upstream = %q; want the client's entry with the peer appended", got.For)
	}
}

// TestNginxBalancesReplicas routes one prefix to two replicas: requests reach both, and
// once one is gone every POST is still answered, by the other (a refused connection is
// passed on before anything was sent).
func TestNginxBalancesReplicas(t *testing.T) {
	if _, err := NginxPath(); err != nil {
		t.Skip(err)
	}
	replica := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(name)) }))
	}
	a, b := replica("a"), replica("b")
	defer a.Close()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := SelfSignedCert(cert, key); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	n, err := StartNginx(context.Background(), NginxOptions{Listen: listen, Dir: dir, CertFile: cert, KeyFile: key,
		Routes: map[string]string{"/hook": a.Listener.Addr().String() + "," + b.Listener.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(5 * time.Second)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	post := func() (string, int) {
		resp, err := client.Post("https://"+listen+"/hook", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), resp.StatusCode
	}
	seen := map[string]int{}
	for range 10 {
		name, _ := post()
		seen[name]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("answers by replica: %v; want both", seen)
	}
	b.Close()
	for i := range 10 {
		if name, status := post(); status != http.StatusOK || name != "a" {
			t.Fatalf("POST %d with replica b gone: %d %q; want 200 from a", i, status, name)
		}
	}
}
