package authd

import (
	"net/http"

	"github.com/sigops/sigops/runtime/trustedproxy"
)

// requireHTTPS serves a request only when it arrived over TLS or from a trusted proxy that
// says the client used HTTPS: cookies are Secure and credentials never travel in clear.
func (s *Server) requireHTTPS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if trustedproxy.Proxies(s.o.TrustedProxies).OverHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		writeJSON(w, http.StatusForbidden, failureBody{Error: "HTTPS is required; plain HTTP is not supported",
			Code: "HTTPS_REQUIRED", Timestamp: s.o.Now().UnixMilli()})
	})
}

// clientKey is the address the brute-force and registration limits count: the peer, or
// behind trusted proxies the right-most X-Forwarded-For entry that is not itself a trusted
// proxy (entries further left are the client's to forge). IPv6 addresses count by /64, the
// smallest block a client is usually given.
func (s *Server) clientKey(r *http.Request) string {
	a, ok := trustedproxy.Proxies(s.o.TrustedProxies).Client(r)
	if !ok {
		return "unknown"
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// securityHeaders are set on every response of the public routes.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer a browser sends "Origin: null"
		// with a form's POST (the Fetch standard's origin serialization), and the origin
		// checks of the login, consent and dashboard forms then refuse every real browser.
		// Other sites still get no referrer.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Strict-Transport-Security", "max-age=63072000")
		next.ServeHTTP(w, r)
	})
}

// openCORS lets browser-based MCP clients read discovery documents and call the token,
// registration and revocation endpoints; none of them reads cookies, so no credentials are
// allowed across origins.
func openCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		h.Set("Access-Control-Max-Age", "600")
		next.ServeHTTP(w, r)
	})
}
