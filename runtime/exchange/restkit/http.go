package restkit

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/errs"
)

// PooledClient is the HTTP client an adapter shares among its accounts that bring none:
// connections are pooled per host, and dialling and the TLS handshake are bounded by
// timeout (the adapter's call budget). Both adapters tune it alike; each keeps its own
// client, so that one venue's connections never crowd out the other's.
func PooledClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
	}}
}

// BaseURL is s as scheme://host[/path] with no trailing slash, the form both adapters'
// clients join paths to; anything but an http(s) URL is EXCHANGE_DISCONNECTED, named for
// venue.
func BaseURL(venue, s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errs.New(errs.ExchangeDisconnected, "%s endpoint %q is not an http(s) URL", venue, s)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/"), nil
}

// Remaining is what is left of ctx's deadline (an hour when it has none): both adapters
// size an order placement's attempts and read-backs by it.
func Remaining(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return time.Hour
}
