// Package trustedproxy decides what a daemon behind a reverse proxy (the Ingress, the local
// stack's nginx) may believe of a request: whether the client used HTTPS and who the client
// is. Headers are believed only from configured proxy addresses; anyone else could forge them.
package trustedproxy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the CIDRs whose X-Forwarded-* headers are believed.
type Proxies []netip.Prefix

// Parse reads a comma-separated list of CIDRs (the daemons' --trusted-proxies flag).
func Parse(csv string) (Proxies, error) {
	var out Proxies
	for _, part := range strings.Split(csv, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Trusts reports whether a is one of the proxies.
func (ps Proxies) Trusts(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Peer is the address the connection came from.
func Peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// OverHTTPS reports whether the client used HTTPS: the connection is TLS, or a trusted
// proxy says so in X-Forwarded-Proto (the first entry, the client's own hop).
func (ps Proxies) OverHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	a, ok := Peer(r)
	if !ok || !ps.Trusts(a) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// Client is the client's address: the peer, or behind trusted proxies the right-most
// X-Forwarded-For entry that is not itself a trusted proxy (entries further left are the
// client's to forge).
func (ps Proxies) Client(r *http.Request) (netip.Addr, bool) {
	a, ok := Peer(r)
	if !ok || !ps.Trusts(a) {
		return a, ok
	}
	hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = h.Unmap()
		if !ps.Trusts(a) {
			break
		}
	}
	return a, true
}
