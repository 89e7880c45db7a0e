// Package trustedproxy decides what a daemon behind a reverse proxy (the Ingress, the local
// stack's nginx) may believe of a request: whether the client used HTTPS and who the client
// is. Headers are believed only from configured proxy addresses; anyone else could forge them.
//
// Even from a trusted proxy, only the part the proxy itself wrote is believed. A proxy that
// appends to X-Forwarded-Proto or X-Forwarded-For keeps whatever the client sent on the left
// (or on earlier header lines), so a client could write "X-Forwarded-Proto: https" over plain
// HTTP and have the proxy pass "https, http". The rule is therefore:
//
//   - HTTPS: the right-most X-Forwarded-Proto entry across all header lines (the proxy's
//     line is the last) must be "https". The proxy next to the daemon must set that header
//     to the scheme it received (ingress-nginx does; the local stack's nginx sets $scheme).
//   - Client address: walking X-Forwarded-For from the right across all header lines, the
//     first entry that is not itself a trusted proxy.
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
// proxy says so in X-Forwarded-Proto. Only the right-most entry is the proxy's own; any
// entry to its left may be the client's forgery.
func (ps Proxies) OverHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	a, ok := Peer(r)
	if !ok || !ps.Trusts(a) {
		return false
	}
	protos := entries(r.Header, "X-Forwarded-Proto")
	return len(protos) > 0 && strings.EqualFold(protos[len(protos)-1], "https")
}

// Client is the client's address: the peer, or behind trusted proxies the right-most
// X-Forwarded-For entry that is not itself a trusted proxy (entries further left are the
// client's to forge).
func (ps Proxies) Client(r *http.Request) (netip.Addr, bool) {
	a, ok := Peer(r)
	if !ok || !ps.Trusts(a) {
		return a, ok
	}
	hops := entries(r.Header, "X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(hops[i])
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

// entries are the comma-separated entries of every line of header name, in order: a proxy
// may append a line of its own instead of extending the client's, and the last line is then
// the proxy's.
func entries(h http.Header, name string) []string {
	var out []string
	for _, line := range h.Values(name) {
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}
