// Package connectors lists the live exchange adapters by the name ExchangeConnection's
// spec.exchange uses. The manager (validation) and the executor (trading) build the same
// map from here, so they always agree.
package connectors

import (
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/okx"
)

// All returns every supported exchange's connector.
func All() map[string]exchange.Connector {
	return map[string]exchange.Connector{
		binance.Name: binance.Connector{},
		bybit.Name:   bybit.Connector{},
		okx.Name:     okx.Connector{},
	}
}
