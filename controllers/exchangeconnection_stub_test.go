package controllers_test

import (
	"context"
	"sync"

	"github.com/sigops/sigops/runtime/exchange"
)

// stubConnector stands in for an exchange: its accounts answer Permissions as configured
// per API key (by default read and spot trading), and it records every call.
type stubConnector struct {
	name    string
	mu      sync.Mutex
	answers map[string]stubAnswer
	modes   map[string]exchange.AccountMode
	seen    map[string][]stubCall
}

type stubAnswer struct {
	perms exchange.Permissions
	err   error
}

type stubCall struct {
	creds exchange.Credentials
	ep    exchange.Endpoints
}

func newStubConnector(name string) *stubConnector {
	return &stubConnector{name: name, answers: map[string]stubAnswer{}, modes: map[string]exchange.AccountMode{}, seen: map[string][]stubCall{}}
}

func (s *stubConnector) Name() string { return s.name }

func (s *stubConnector) Connect(c exchange.Credentials, ep exchange.Endpoints) (exchange.Live, error) {
	return &stubLive{stub: s, creds: c, ep: ep}, nil
}

// answer sets what the key apiKey's Permissions call returns.
func (s *stubConnector) answer(apiKey string, perms exchange.Permissions, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[apiKey] = stubAnswer{perms: perms, err: err}
}

// calls are the Permissions calls made with apiKey.
func (s *stubConnector) calls(apiKey string) []stubCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stubCall(nil), s.seen[apiKey]...)
}

// stubLive is an account of the stub; only Permissions is used by the controller.
type stubLive struct {
	exchange.Exchange
	stub  *stubConnector
	creds exchange.Credentials
	ep    exchange.Endpoints
}

func (l *stubLive) Permissions(context.Context) (exchange.Permissions, error) {
	l.stub.mu.Lock()
	defer l.stub.mu.Unlock()
	l.stub.seen[l.creds.APIKey] = append(l.stub.seen[l.creds.APIKey], stubCall{creds: l.creds, ep: l.ep})
	a, ok := l.stub.answers[l.creds.APIKey]
	if !ok {
		return exchange.Permissions{Read: true, SpotTrade: true}, nil
	}
	return a.perms, a.err
}

var (
	permsTrade    = exchange.Permissions{Read: true, SpotTrade: true, FuturesTrade: true}
	permsSpot     = exchange.Permissions{Read: true, SpotTrade: true}
	permsWithdraw = exchange.Permissions{Read: true, SpotTrade: true, Withdraw: true}
)

// Markets lists one symbol per kind, which the controller records for webhookd.
func (l *stubLive) Markets(_ context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	return []exchange.MarketInfo{{Symbol: "ETH/USDT", Base: "ETH", Quote: "USDT", Kind: kind}}, nil
}

// setMode sets the futures account mode the key apiKey's account reports (by default one-way
// with nothing open).
func (s *stubConnector) setMode(apiKey string, m exchange.AccountMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modes[apiKey] = m
}

func (l *stubLive) AccountMode(context.Context) (exchange.AccountMode, error) {
	l.stub.mu.Lock()
	defer l.stub.mu.Unlock()
	if m, ok := l.stub.modes[l.creds.APIKey]; ok {
		return m, nil
	}
	return exchange.AccountMode{Mode: exchange.OneWay}, nil
}
