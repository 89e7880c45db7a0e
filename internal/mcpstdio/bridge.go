// Package mcpstdio is the local stdio MCP client sigops-mcp: an MCP server on stdin/stdout
// for desktop agents that bridges to the hosted server ({mcp_url}/mcp, streamable HTTP)
// over HTTPS. It serves five tools itself (login, authenticate, set_token, logout,
// check_auth) and forwards every other tool to the hosted server with the hosted server's
// definitions. Tokens live in this process's memory only: nothing is written to disk.
package mcpstdio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultBaseURL is the local stack's {base_url} (hack/localstack), the base URL when no
// flag or environment variable names one.
const DefaultBaseURL = "https://127.0.0.1:8443"

// AuthorizeTimeout bounds how long authenticate's loopback callback waits for the browser.
const AuthorizeTimeout = 5 * time.Minute

// Options configure the bridge.
type Options struct {
	// BaseURL is {base_url}: authd (login, OAuth, the server card).
	BaseURL string
	// MCPURL is {mcp_url}, the hosted server's origin (empty: discovered from the base
	// URL's server card, then its protected resource metadata).
	MCPURL string
	// CAFile is a PEM file of extra certificate authorities to trust (the local stack's
	// self-signed certificate), added to the system pool.
	CAFile string
	// Version is the serverInfo version.
	Version string
	Logger  *slog.Logger
	// AuthorizeTimeout bounds the wait for the browser (zero: AuthorizeTimeout).
	AuthorizeTimeout time.Duration
}

// Bridge is the stdio server and its link to the hosted server.
type Bridge struct {
	o    Options
	http *http.Client
	log  *slog.Logger
	mcp  *server.MCPServer

	mu        sync.Mutex
	tok       token
	endpoint  string // {mcp_url}/mcp, once known
	hosted    *hostedClient
	forwarded map[string]bool // names of the registered hosted tools
	oauth     *oauthClient    // the dynamic registration, once made
	pending   *pendingAuth    // the browser authorization under way
	refreshMu sync.Mutex
}

// New returns a bridge; it reads the CA file but makes no request.
func New(o Options) (*Bridge, error) {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	var err error
	if o.BaseURL, err = origin(o.BaseURL); err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if o.MCPURL != "" {
		if o.MCPURL, err = origin(o.MCPURL); err != nil {
			return nil, fmt.Errorf("MCP URL: %w", err)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.AuthorizeTimeout <= 0 {
		o.AuthorizeTimeout = AuthorizeTimeout
	}
	hc, err := httpClient(o.CAFile)
	if err != nil {
		return nil, err
	}
	b := &Bridge{o: o, http: hc, log: o.Logger, forwarded: map[string]bool{}}
	if o.MCPURL != "" {
		b.endpoint = o.MCPURL + "/mcp"
	}
	b.mcp = server.NewMCPServer("sigops-mcp", o.Version, server.WithToolCapabilities(true), server.WithRecovery(),
		server.WithInstructions("sigops automated crypto trading. Call check_auth first; without a token, ask the user "+
			"to sign in with authenticate (browser, preferred), login or set_token."))
	b.mcp.AddTools(b.ownTools()...)
	return b, nil
}

// Serve speaks MCP on in/out until in closes or ctx ends.
func (b *Bridge) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(b.mcp)
	s.SetErrorLogger(slog.NewLogLogger(b.log.Handler(), slog.LevelError))
	err := s.Listen(ctx, in, out)
	b.mu.Lock()
	p := b.pending
	b.mu.Unlock()
	if p != nil {
		p.cancel()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// origin accepts scheme://host[:port] with no path beyond "/".
func origin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", errors.New("want scheme://host[:port] without a path")
	}
	return u.Scheme + "://" + u.Host, nil
}

// httpClient trusts the system roots plus caFile's certificates.
func httpClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}

// mcpEndpoint is {mcp_url}/mcp: the flag's, else the server card's streamable-http
// endpoint, else the protected resource metadata's MCP resource. A failed discovery is
// tried again on the next call.
func (b *Bridge) mcpEndpoint(ctx context.Context) (string, error) {
	b.mu.Lock()
	ep := b.endpoint
	b.mu.Unlock()
	if ep != "" {
		return ep, nil
	}
	var card struct {
		Transport struct {
			Type     string `json:"type"`
			Endpoint string `json:"endpoint"`
		} `json:"transport"`
	}
	if err := b.getJSON(ctx, b.o.BaseURL+"/.well-known/mcp/server-card.json", &card); err == nil &&
		card.Transport.Type == "streamable-http" && strings.HasPrefix(card.Transport.Endpoint, "https://") {
		ep = card.Transport.Endpoint
	} else {
		var prm struct {
			Resource    string `json:"resource"`
			MCPResource string `json:"mcp_resource"`
		}
		if err := b.getJSON(ctx, b.o.BaseURL+"/.well-known/oauth-protected-resource/mcp", &prm); err != nil {
			return "", fmt.Errorf("discover the MCP endpoint from %s: %w", b.o.BaseURL, err)
		}
		ep = prm.Resource
		if !strings.HasSuffix(ep, "/mcp") {
			ep = prm.MCPResource
		}
		if !strings.HasPrefix(ep, "https://") {
			return "", fmt.Errorf("discover the MCP endpoint from %s: no https resource", b.o.BaseURL)
		}
	}
	b.mu.Lock()
	b.endpoint = ep
	b.mu.Unlock()
	b.log.Info("hosted MCP endpoint", "endpoint", ep)
	return ep, nil
}

func (b *Bridge) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
