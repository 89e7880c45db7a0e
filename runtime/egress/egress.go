// Package egress sends HTTP requests to destinations that users choose (outbound webhooks to
// their own receivers, Slack or Discord), which makes every such request a way to reach
// what the user should not: the cloud's metadata service, the cluster's own services, the
// loopback interface. A Client refuses them twice: when a destination is saved (Check: the
// URL's form and every address its name resolves to) and when it is dialled (the address
// the connection actually goes to, so a name that resolves elsewhere the second time, DNS
// rebinding, is refused too). Redirects are never followed, a response body is read to at
// most MaxBody bytes, and a request takes at most Timeout, however slow the receiver.
//
// The address rules are code.dny.dev/ssrf's (every IPv4 prefix of IANA's special-purpose
// registry — private, loopback, link-local with 169.254.169.254, shared, multicast,
// reserved — and every IPv6 address outside global unicast or in the registry).
package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// DefaultTimeout is how long a request may take, connection to last byte read.
const DefaultTimeout = 5 * time.Second

// DefaultMaxBody is how much of a response body is read.
const DefaultMaxBody = 64 << 10

// Options configure a Client; the zero value is production's.
type Options struct {
	// LoopbackHTTP lets plain-HTTP destinations on the loopback interface (127.0.0.0/8,
	// ::1) through, and only those: the local stack's receivers. Production never sets it.
	LoopbackHTTP bool
	// Timeout (DefaultTimeout when 0) and MaxBody (DefaultMaxBody when 0).
	Timeout time.Duration
	MaxBody int64
	// Resolver resolves destinations' names for Check (net.DefaultResolver when nil).
	Resolver *net.Resolver
}

// ErrRefused: the destination is not one a request may go to. The message says why, and
// never holds more of the URL than its host.
var ErrRefused = errors.New("destination refused")

// Client sends requests to user-chosen destinations. It is safe for concurrent use.
type Client struct {
	opts  Options
	guard *ssrf.Guardian
	hc    *http.Client
}

// loopback are the prefixes Options.LoopbackHTTP allows.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// New is a Client with o.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	guardOpts := []ssrf.Option{ssrf.WithAnyPort()}
	if o.LoopbackHTTP {
		guardOpts = append(guardOpts, ssrf.WithAllowedV4Prefixes(loopback[0]), ssrf.WithAllowedV6Prefixes(loopback[1]))
	}
	c := &Client{opts: o, guard: ssrf.New(guardOpts...)}
	dialer := &net.Dialer{Timeout: o.Timeout, Control: c.guard.Safe}
	c.hc = &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			// No proxy from the environment: it would dial in our stead, past the guard.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
		},
		// A redirect is answered as it is: following it would go where the user did not
		// say, and past Check.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Check says whether rawURL may be saved as a destination: an absolute https URL (or http
// on the loopback interface when the options allow it) without credentials, whose host
// resolves, and only to permitted addresses.
func (c *Client) Check(ctx context.Context, rawURL string) error {
	u, err := c.parse(rawURL)
	if err != nil {
		return err
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = c.opts.Resolver.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
		return fmt.Errorf("%w: %s does not resolve", ErrRefused, host)
	}
	for _, a := range addrs {
		if err := c.guard.SafeAddr(a.Unmap()); err != nil {
			return fmt.Errorf("%w: %s resolves to %s, which is not a public address", ErrRefused, host, a)
		}
		if u.Scheme == "http" && !isLoopback(a) {
			return fmt.Errorf("%w: plain http is allowed on the loopback interface only", ErrRefused)
		}
	}
	return nil
}

// parse reads rawURL's form: scheme, host, no credentials, no fragment.
func (c *Client) parse(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: not an absolute URL", ErrRefused)
	}
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("%w: credentials in the URL", ErrRefused)
	case u.Scheme == "https":
	case u.Scheme == "http" && c.opts.LoopbackHTTP:
	default:
		return nil, fmt.Errorf("%w: the URL must be https", ErrRefused)
	}
	if u.Fragment != "" || strings.ContainsAny(u.Host, " \t\r\n") {
		return nil, fmt.Errorf("%w: a fragment or spaces in the URL", ErrRefused)
	}
	return u, nil
}

func isLoopback(a netip.Addr) bool {
	a = a.Unmap()
	return loopback[0].Contains(a) || loopback[1].Contains(a)
}

// Response is what a receiver answered: its status and the first MaxBody bytes of its body.
type Response struct {
	Status int
	Body   []byte
}

// OK says whether the receiver accepted the request (a 2xx status).
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Post sends body to rawURL with header. The URL's form is checked again, and the address
// when the connection is made; a refused address is an error wrapping ErrRefused. A
// response of any status is a Response, not an error.
func (c *Client) Post(ctx context.Context, rawURL string, header http.Header, body []byte) (Response, error) {
	u, err := c.parse(rawURL)
	if err != nil {
		return Response{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isGuard(err) {
			return Response{}, fmt.Errorf("%w: %s is not a public address", ErrRefused, u.Hostname())
		}
		// The error names the URL; say only the host, which the user chose, and why.
		return Response{}, fmt.Errorf("deliver to %s: %w", u.Hostname(), unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBody))
	if err != nil {
		return Response{Status: resp.StatusCode}, fmt.Errorf("deliver to %s: read the answer: %w", u.Hostname(), unwrapURL(err))
	}
	return Response{Status: resp.StatusCode, Body: data}, nil
}

// isGuard says whether err is the guard's refusal of an address.
func isGuard(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork) ||
		errors.Is(err, ssrf.ErrProhibitedPort) || errors.Is(err, ssrf.ErrInvalidHostPort)
}

// unwrapURL is err without the *url.Error that names the whole URL (a path may hold a
// receiver's token).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
