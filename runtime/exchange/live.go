package exchange

import (
	"context"
	"errors"
	"sort"
)

// Credentials of an exchange API key. They live encrypted at rest (runtime/credentials) and
// in clear only in the memory of the process that signs requests; String never shows them.
type Credentials struct {
	APIKey     string
	APISecret  string
	Passphrase string
}

// String redacts, so that a credential printed by mistake (a log, an error) shows nothing.
func (Credentials) String() string { return "[credentials redacted]" }

// GoString redacts for %#v too.
func (c Credentials) GoString() string { return c.String() }

// Endpoints override an exchange's base URLs (ExchangeConnection.spec.endpoints): testnets
// and the local fakes. Empty fields mean the exchange's production (or testnet) defaults.
type Endpoints struct {
	Spot    string
	Futures string
	Testnet bool
}

// Permissions are what an API key may do, as the exchange reports them.
type Permissions struct {
	Read         bool
	SpotTrade    bool
	FuturesTrade bool
	// Withdraw and Transfer must be false: sigops refuses keys that can move funds out.
	Withdraw bool
	Transfer bool
	// IPRestricted: the key only works from allow-listed IPs.
	IPRestricted bool
}

// List is the permissions as status.permissions shows them, sorted.
func (p Permissions) List() []string {
	var out []string
	for name, on := range map[string]bool{"read": p.Read, "spot": p.SpotTrade, "futures": p.FuturesTrade,
		"withdraw": p.Withdraw, "transfer": p.Transfer, "ipRestricted": p.IPRestricted} {
		if on {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// CanTrade reports whether the key may trade kind.
func (p Permissions) CanTrade(kind Kind) bool {
	if kind == Futures {
		return p.FuturesTrade
	}
	return p.SpotTrade
}

// Live is an authenticated exchange account.
type Live interface {
	Exchange
	// Permissions makes an authenticated call and returns the key's permissions. It fails
	// with ErrInvalidCredentials for a key the exchange refuses and ErrUnreachable when the
	// exchange cannot be reached (time-out, 5xx, DNS).
	Permissions(ctx context.Context) (Permissions, error)
}

// Connector makes Live accounts of one exchange. Connect makes no network call.
type Connector interface {
	Name() string // "binance" or "bybit", as ExchangeConnection.spec.exchange
	Connect(creds Credentials, ep Endpoints) (Live, error)
}

// Errors of Permissions (wrapped; test with errors.Is).
var (
	ErrInvalidCredentials = errors.New("the exchange refused the API key")
	ErrUnreachable        = errors.New("the exchange cannot be reached")
)
