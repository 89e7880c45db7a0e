package controllers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/exchange"
)

// Ready reasons of an ExchangeConnection.
const (
	reasonValidated                   = "Validated"
	reasonSecretNotFound              = "SecretNotFound"
	reasonSecretMissingKeys           = "SecretMissingKeys"
	reasonExchangeNotSupported        = "ExchangeNotSupported"
	reasonMasterKeyMissing            = "MasterKeyMissing"
	reasonConnectFailed               = "ConnectFailed"
	reasonInvalidCredentials          = "InvalidCredentials"
	reasonUnreachable                 = "Unreachable"
	reasonValidationFailed            = "ValidationFailed"
	reasonWithdrawalPermissionEnabled = "WithdrawalPermissionEnabled"
	reasonMissingReadPermission       = "MissingReadPermission"
	// reasonMissingTradePermission is a connection's reason when its key can trade neither
	// spot nor futures, and a bot's when the key lacks its market's permission.
	reasonMissingTradePermission = "MissingTradePermission"
	reasonSealFailed             = "SealFailed"
	// reasonPositionModeChanged: the futures account's position mode is not the one last
	// recorded and positions are open (exchangeconnection_mode.go).
	reasonPositionModeChanged = "PositionModeChanged"
)

// verdict is the outcome of checking a key, with what the exchange reported.
type verdict struct {
	outcome
	// answered: the exchange answered about the key (accepted or refused it), which sets
	// status.lastValidatedAt.
	answered bool
	// perms are the permissions the exchange reported; nil when it did not report them.
	perms []string
	// mode is the futures position mode to record; empty keeps the recorded one.
	mode tradingv1.PositionMode
}

// validate connects with creds and makes the authenticated permissions call, bounded by the
// validation timeout, and judges the key: it must be accepted, able to read, able to trade
// spot or futures, and unable to withdraw or transfer. Messages never hold a credential:
// the connector's own error text is included only for unexpected errors, redacted.
//
// A key that can trade futures also has its account's position mode read (was is the mode
// recorded before; see exchangeconnection_mode.go).
func (r *ExchangeConnectionReconciler) validate(ctx context.Context, connector exchange.Connector, creds exchange.Credentials, ep exchange.Endpoints, was tradingv1.PositionMode) verdict {
	name := connector.Name()
	where := name
	if ep.Testnet {
		where += " (testnet)"
	}
	live, err := connector.Connect(creds, ep)
	if errors.Is(err, exchange.ErrInvalidCredentials) {
		return verdict{outcome: stalledOutcome(reasonInvalidCredentials,
			name+" does not accept the API key's format; put a valid key in the credentials Secret")}
	}
	if err != nil {
		return verdict{outcome: stalledOutcome(reasonConnectFailed,
			"cannot set up the "+name+" client (check spec.endpoints): "+redact(err.Error(), creds))}
	}
	vctx, cancel := context.WithTimeout(ctx, orDefault(r.ValidationTimeout, DefaultExchangeValidationTimeout))
	defer cancel()
	p, err := live.Permissions(vctx)
	switch {
	case err == nil:
	case errors.Is(err, exchange.ErrInvalidCredentials):
		return verdict{answered: true, outcome: stalledOutcome(reasonInvalidCredentials,
			where+" refused the API key (wrong, expired or deleted, or this address is not on its IP allow-list); put a valid key in the credentials Secret")}
	case errors.Is(err, exchange.ErrUnreachable), errors.Is(err, context.DeadlineExceeded), vctx.Err() != nil:
		return verdict{outcome: retryingOutcome(reasonUnreachable,
			where+" cannot be reached; retrying with backoff")}
	default:
		return verdict{outcome: retryingOutcome(reasonValidationFailed,
			"checking the API key with "+where+" failed: "+redact(err.Error(), creds)+"; retrying with backoff")}
	}

	list := p.List()
	shown := "permissions " + strings.Join(list, ", ")
	if len(list) == 0 {
		shown = "no permissions"
	}
	v := verdict{answered: true, perms: list}
	if v.perms == nil {
		v.perms = []string{}
	}
	switch {
	case p.Withdraw || p.Transfer:
		v.outcome = stalledOutcome(reasonWithdrawalPermissionEnabled,
			"the API key can "+movesFunds(p)+" ("+shown+"); sigops never uses such keys: make a key without withdrawal and transfer permissions")
	case !p.Read:
		v.outcome = stalledOutcome(reasonMissingReadPermission,
			"the API key cannot read the account ("+shown+"); enable reading on the key")
	case !p.SpotTrade && !p.FuturesTrade:
		v.outcome = stalledOutcome(reasonMissingTradePermission,
			"the API key can trade neither spot nor futures ("+shown+"); enable the trading permission your bots' market needs")
	default:
		if p.FuturesTrade {
			var changed *outcome
			if v.mode, changed = r.positionMode(vctx, live, where, was); changed != nil {
				v.outcome = *changed
				return v
			}
		}
		v.outcome = readyOutcome(reasonValidated, "validated with "+where+": "+shown)
		r.publishSymbols(vctx, live, p)
	}
	return v
}

// publishSymbols records the symbols this key can trade, so that webhookd accepts them at the
// door. Best effort: without them webhookd refuses the exchange-only symbols with
// INVALID_SYMBOL until the next validation records them.
func (r *ExchangeConnectionReconciler) publishSymbols(ctx context.Context, live exchange.Live, p exchange.Permissions) {
	if r.Registry == nil {
		return
	}
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		if !p.CanTrade(kind) {
			continue
		}
		markets, err := live.Markets(ctx, kind)
		if err != nil {
			log.FromContext(ctx).Info("cannot list the exchange's markets; webhookd keeps its known symbols", "kind", kind)
			continue
		}
		symbols := make([]string, 0, len(markets))
		for _, m := range markets {
			symbols = append(symbols, m.Symbol)
		}
		if err := r.Registry.AddSymbols(ctx, symbols); err != nil {
			log.FromContext(ctx).Error(err, "cannot record the exchange's symbols")
		}
	}
}

func movesFunds(p exchange.Permissions) string {
	switch {
	case p.Withdraw && p.Transfer:
		return "withdraw and transfer funds"
	case p.Withdraw:
		return "withdraw funds"
	}
	return "transfer funds"
}

// backoff counts consecutive transient failures per connection, so that an unreachable
// exchange is retried after a delay that doubles each time (and the exchange is not
// hammered by the controller-runtime default of a few milliseconds).
type backoff struct {
	mu       sync.Mutex
	failures map[types.UID]int
}

// next counts a failure and returns the delay before the next attempt: base, 2·base, 4·base…
// never above limit.
func (b *backoff) next(uid types.UID, base, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == nil {
		b.failures = map[types.UID]int{}
	}
	n := b.failures[uid]
	b.failures[uid] = n + 1
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	if d > limit {
		d = limit
	}
	return d
}

func (b *backoff) reset(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, uid)
}
