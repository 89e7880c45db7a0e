package webhookd

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// requireHTTPS enforces the spec's "HTTPS only": a request is served when it arrived over
// TLS, or from a trusted proxy that says the client used HTTPS (X-Forwarded-Proto). Anything
// else is refused with a clear error, never served in clear. The header is ignored from
// untrusted peers, who could otherwise claim HTTPS.
func (s *Server) requireHTTPS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil || s.fromTrustedProxyOverHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.metrics.signals.WithLabelValues("refused", "HTTPS_REQUIRED").Inc()
		writeJSON(w, http.StatusForbidden, failureBody{
			Error: "HTTPS is required; plain HTTP is not supported", Code: "HTTPS_REQUIRED", Timestamp: s.opts.Now().UnixMilli(),
		})
	})
}

func (s *Server) fromTrustedProxyOverHTTPS(r *http.Request) bool {
	if len(s.opts.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	trusted := false
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(addr) {
			trusted = true
			break
		}
	}
	// With several proxies the header is a list; the first entry is the client's scheme.
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return trusted && strings.EqualFold(strings.TrimSpace(proto), "https")
}
