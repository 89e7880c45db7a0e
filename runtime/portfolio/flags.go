package portfolio

import (
	"flag"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
)

// withoutKey is what a process without a master key does with exchange connections.
const withoutKey = `the portfolio lists exchange connections with the error "credentials unavailable"`

// Flags are the portfolio flags of every process that serves portfolios (webhookd's read
// API, mcpd), declared and wired in one place so that they mean the same everywhere.
type Flags struct {
	MasterKeys            credentials.KeyFlags
	CacheTTL, CallTimeout time.Duration
}

// Bind declares --master-key-file, --previous-master-key-files,
// --portfolio-exchange-cache and --portfolio-exchange-timeout on fs.
func (f *Flags) Bind(fs *flag.FlagSet) {
	f.MasterKeys.Bind(fs, "opens exchange connections' credentials to read their balances for the portfolio; mount a Secret. Without it "+withoutKey)
	fs.DurationVar(&f.CacheTTL, "portfolio-exchange-cache", DefaultCacheTTL, "how long the portfolio reuses an exchange connection's balances and prices")
	fs.DurationVar(&f.CallTimeout, "portfolio-exchange-timeout", DefaultCallTimeout, "how long the portfolio waits for one exchange connection's balances and prices before showing it with an error")
}

// Options are the flags' portfolio Options on rdb, valuing paper accounts at prices; with a
// master key, Clients connects exchange connections through every live connector.
func (f Flags) Options(rdb redis.UniversalClient, prices paper.PriceSource, logger *slog.Logger) (Options, error) {
	keys, err := f.MasterKeys.Load(logger, withoutKey)
	if err != nil {
		return Options{}, err
	}
	o := Options{Redis: rdb, Prices: prices, CacheTTL: f.CacheTTL, CallTimeout: f.CallTimeout}
	if keys != nil {
		o.Clients = &connectors.Clients{Keys: keys, Connectors: connectors.All()}
	}
	return o, nil
}
