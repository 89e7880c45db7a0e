package executor

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/registry"
)

// DefaultLiveFeeRate sizes "N%" orders on exchange accounts: 0.1 %, the highest regular
// spot taker fee of the supported exchanges, so that the fee always fits the balance. Fee
// endpoints of the exchanges can replace it per account later.
var DefaultLiveFeeRate = decimal.RequireFromString("0.001")

// LiveVenues opens bots' exchange connections (registry.AccountExchange). It reads the
// connection's projection (runtime/credentials) by the bot's Account.ID, refuses what the
// bot may not use, and gets the connected client from Clients, which opens the sealed
// credentials with the master key ring and caches the client per connection and sealed
// blob, so signals reuse it.
//
// Refusals, as the executor answers them:
//   - no projection, not Ready (refused key, exchange unreachable at validation), no usable
//     credentials, no master key or connector in this executor: EXCHANGE_DISCONNECTED;
//   - the connection belongs to another owner, or its key lacks the trade permission of
//     the bot's market: BOT_DISABLED.
type LiveVenues struct {
	Redis redis.UniversalClient
	// Clients connects the connections (nil refuses every exchange account).
	Clients *connectors.Clients
	// FeeRate sizes "N%" orders (zero: DefaultLiveFeeRate).
	FeeRate decimal.Decimal
}

// Open implements Venues for exchange accounts.
func (v *LiveVenues) Open(ctx context.Context, bot registry.Bot) (Account, error) {
	name := bot.Account.Name
	if bot.Account.ID == "" {
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q does not exist", name)
	}
	c, err := credentials.NewConnections(v.Redis).Get(ctx, bot.Account.ID)
	if errors.Is(err, credentials.ErrNotFound) {
		v.forget(bot.Account.ID)
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q does not exist", name)
	}
	if err != nil {
		return Account{}, err // Redis: retried
	}
	// Ownership first: nothing about someone else's connection is used or revealed.
	if c.Owner == "" || !emails.Same(c.Owner, bot.Owner) {
		return Account{}, errs.New(errs.BotDisabled, "exchange connection %q does not belong to the bot's owner", name)
	}
	if !c.Ready || c.Sealed == "" {
		v.forget(c.UID) // a refused key leaves this process's memory too
		return Account{}, errs.New(errs.ExchangeDisconnected, "exchange connection %q is not ready (%s)", name, c.Reason)
	}
	kind := exchange.Spot
	if bot.Market == string(exchange.Futures) {
		kind = exchange.Futures
	}
	if !c.CanTrade(kind) {
		return Account{}, errs.New(errs.BotDisabled, "the API key of exchange connection %q lacks the %s trading permission",
			name, credentials.TradePermission(kind))
	}
	live, err := v.client(c)
	if err != nil {
		return Account{}, err
	}
	fee := v.FeeRate
	if fee.IsZero() {
		fee = DefaultLiveFeeRate
	}
	var ex exchange.Exchange = live
	// An adapter whose spot and futures wallets differ (Binance) gives the view of the
	// bot's market, so that balances and sizing read the right wallet.
	if k, ok := live.(interface {
		ForKind(exchange.Kind) exchange.Live
	}); ok {
		ex = k.ForKind(kind)
	}
	return Account{Exchange: ex, FeeRate: fee, Venue: c.Exchange}, nil
}

// client connects c through Clients.
func (v *LiveVenues) client(c credentials.Connection) (exchange.Live, error) {
	if v.Clients == nil {
		return nil, errs.New(errs.ExchangeDisconnected, "this executor has no master key to open exchange credentials")
	}
	return v.Clients.Client(c)
}

// forget drops the cached client of a connection.
func (v *LiveVenues) forget(uid string) {
	if v.Clients != nil {
		v.Clients.Forget(uid)
	}
}
