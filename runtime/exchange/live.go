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

// PositionMode is how a futures account holds positions on a symbol.
type PositionMode string

const (
	// OneWay holds one net position per symbol: a sell reduces a long, and past it opens a
	// short. Every venue's default.
	OneWay PositionMode = "oneWay"
	// Hedge (two-way) holds a long and a short position per symbol side by side; each order
	// names the side it acts on (Binance positionSide, Bybit positionIdx, OKX posSide).
	Hedge PositionMode = "hedge"
)

// AccountMode is a futures account's position mode as the exchange reports it, with the
// number of positions it holds open (any symbol, either side): a mode that changed while
// positions were open is refused rather than guessed at (docs/exchanges.md).
type AccountMode struct {
	Mode          PositionMode
	OpenPositions int
}

// ModeReader is a Live account that can read its futures position mode. The adapters
// also keep the mode they read for placing orders (positionSide and its kin), and read it
// again when the exchange answers that an order's side does not match the account's mode.
type ModeReader interface {
	AccountMode(ctx context.Context) (AccountMode, error)
}
