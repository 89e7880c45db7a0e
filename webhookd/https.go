package webhookd

import (
	"net/http"

	"github.com/sigops/sigops/runtime/trustedproxy"
)

// requireHTTPS enforces the spec's "HTTPS only": a request is served when it arrived over
// TLS, or from a trusted proxy that says the client used HTTPS (X-Forwarded-Proto). Anything
// else is refused with a clear error, never served in clear. The header is ignored from
// untrusted peers, who could otherwise claim HTTPS.
func (s *Server) requireHTTPS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if trustedproxy.Proxies(s.opts.TrustedProxies).OverHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.metrics.signals.WithLabelValues("refused", "HTTPS_REQUIRED").Inc()
		writeJSON(w, http.StatusForbidden, failureBody{
			Error: "HTTPS is required; plain HTTP is not supported", Code: "HTTPS_REQUIRED", Timestamp: s.opts.Now().UnixMilli(),
		})
	})
}
