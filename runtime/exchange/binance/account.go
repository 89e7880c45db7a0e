package binance

import (
	"context"
	"net/http"
	"strings"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/futures"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Balance of one asset in the wallet of the account's kind (see ForKind): spot Free and
// Locked; futures Free = availableBalance and Locked = the rest of the wallet balance.
// An asset the account does not hold is a zero balance.
func (x *Account) Balance(ctx context.Context, asset string) (exchange.Balance, error) {
	if x.kind == exchange.Futures {
		return x.FuturesBalance(ctx, asset)
	}
	return x.SpotBalance(ctx, asset)
}

// SpotBalance is the spot wallet's balance of asset (/api/v3/account).
func (x *Account) SpotBalance(ctx context.Context, asset string) (exchange.Balance, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	asset = strings.ToUpper(asset)
	out := exchange.Balance{Asset: asset, Free: decimal.Zero, Locked: decimal.Zero}
	var acct *binance.Account
	if f := x.do(ctx, spotAPI, "GET /api/v3/account", true, func(ctx context.Context) error {
		var err error
		acct, err = x.spot().NewGetAccountService().OmitZeroBalances(true).Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
		return err
	}); f != nil {
		return out, readError(f, "balance")
	}
	for _, b := range acct.Balances {
		if b.Asset == asset {
			out.Free, out.Locked = dec(b.Free), dec(b.Locked)
		}
	}
	return out, nil
}

// FuturesBalance is the USDⓈ-M wallet's balance of asset (/fapi/v3/balance).
func (x *Account) FuturesBalance(ctx context.Context, asset string) (exchange.Balance, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	asset = strings.ToUpper(asset)
	out := exchange.Balance{Asset: asset, Free: decimal.Zero, Locked: decimal.Zero}
	var list []*futures.Balance
	if f := x.do(ctx, futuresAPI, "GET /fapi/v3/balance", true, func(ctx context.Context) error {
		var err error
		list, err = x.fut().NewGetBalanceService().Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
		return err
	}); f != nil {
		return out, readError(f, "balance")
	}
	for _, b := range list {
		if b.Asset == asset {
			out.Free = dec(b.AvailableBalance)
			if locked := dec(b.Balance).Sub(out.Free); locked.IsPositive() {
				out.Locked = locked
			}
		}
	}
	return out, nil
}

// SetLeverage sets a futures symbol's leverage (/fapi/v1/leverage).
func (x *Account) SetLeverage(ctx context.Context, symbol string, leverage int) error {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	bsym, _, _, err := x.resolve(ctx, exchange.Futures, symbol)
	if err != nil {
		return err
	}
	return x.setLeverage(ctx, bsym, leverage)
}

func (x *Account) setLeverage(ctx context.Context, bsym string, leverage int) error {
	if leverage < 1 || leverage > MaxLeverage {
		return errs.New(errs.InvalidAmount, "leverage must be between 1 and %d", MaxLeverage)
	}
	// Setting leverage is idempotent, so a call without an answer is simply repeated.
	if f := x.do(ctx, futuresAPI, "POST /fapi/v1/leverage", true, func(ctx context.Context) error {
		_, err := x.fut().NewChangeLeverageService().Symbol(bsym).Leverage(leverage).Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
		return err
	}); f != nil {
		return readError(f, "leverage change")
	}
	x.levMu.Lock()
	x.leverage[bsym] = leverage
	x.levMu.Unlock()
	return nil
}

// ensureLeverage sets the leverage of an opening futures order unless this account
// already set that value.
func (x *Account) ensureLeverage(ctx context.Context, bsym string, leverage int) error {
	x.levMu.Lock()
	cur := x.leverage[bsym]
	x.levMu.Unlock()
	if cur == leverage {
		return nil
	}
	return x.setLeverage(ctx, bsym, leverage)
}

// Permissions reads the key's restrictions (/sapi/v1/account/apiRestrictions):
// enableReading → Read, enableSpotAndMarginTrading → SpotTrade, enableFutures →
// FuturesTrade, enableWithdrawals → Withdraw, enableInternalTransfer or
// permitsUniversalTransfer → Transfer, ipRestrict → IPRestricted.
//
// The spot testnet has no /sapi endpoints: on a testnet connection a 404 there falls back
// to the signed account endpoints (canTrade of /api/v3/account; a futures balance read
// for FuturesTrade), and Withdraw and Transfer are false (the testnet moves no funds).
func (x *Account) Permissions(ctx context.Context) (exchange.Permissions, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	var r *binance.APIKeyPermission
	f := x.do(ctx, spotAPI, "GET /sapi/v1/account/apiRestrictions", true, func(ctx context.Context) error {
		var err error
		r, err = x.spot().NewGetAPIKeyPermission().Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
		return err
	})
	if f != nil && x.testnet && f.status == http.StatusNotFound {
		return x.testnetPermissions(ctx)
	}
	if f != nil {
		return exchange.Permissions{}, permissionsError(f)
	}
	return exchange.Permissions{
		Read: r.EnableReading, SpotTrade: r.EnableSpotAndMarginTrading, FuturesTrade: r.EnableFutures,
		Withdraw: r.EnableWithdrawals, Transfer: r.EnableInternalTransfer || r.PermitsUniversalTransfer,
		IPRestricted: r.IPRestrict,
	}, nil
}

// permissionsError: a refused key is ErrInvalidCredentials, no answer ErrUnreachable (both
// wrapped in the typed error).
func permissionsError(f *failure) error {
	if f.noAnswer {
		return unreachable(f, "permissions")
	}
	return typed(f, "permissions request")
}

func (x *Account) testnetPermissions(ctx context.Context) (exchange.Permissions, error) {
	var acct *binance.Account
	if f := x.do(ctx, spotAPI, "GET /api/v3/account", true, func(ctx context.Context) error {
		var err error
		acct, err = x.spot().NewGetAccountService().OmitZeroBalances(true).Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
		return err
	}); f != nil {
		return exchange.Permissions{}, permissionsError(f)
	}
	p := exchange.Permissions{Read: true, SpotTrade: acct.CanTrade}
	f := x.do(ctx, futuresAPI, "GET /fapi/v3/balance", true, func(ctx context.Context) error {
		_, err := x.fut().NewGetBalanceService().Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
		return err
	})
	switch {
	case f == nil:
		p.FuturesTrade = true
	case f.noAnswer:
		return exchange.Permissions{}, permissionsError(f)
	case !f.authFailed():
		return exchange.Permissions{}, typed(f, "testnet futures check")
	}
	return p, nil
}

// AccountMode reads the futures account's position mode (GET /fapi/v1/positionSide/dual:
// dualSidePosition true is hedge mode) and counts its open positions (GET
// /fapi/v3/positionRisk: the entries with a non-zero positionAmt, each side of a hedge
// account counting once). The mode read is also kept for placing orders.
func (x *Account) AccountMode(ctx context.Context) (exchange.AccountMode, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	mode, f := x.readMode(ctx)
	if f != nil {
		return exchange.AccountMode{}, readError(f, "position mode")
	}
	var list []*futures.PositionRiskV3
	if f := x.do(ctx, futuresAPI, "GET /fapi/v3/positionRisk", true, func(ctx context.Context) error {
		var err error
		list, err = x.fut().NewGetPositionRiskV3Service().Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
		return err
	}); f != nil {
		return exchange.AccountMode{}, readError(f, "position")
	}
	out := exchange.AccountMode{Mode: mode}
	for _, p := range list {
		if !dec(p.PositionAmt).IsZero() {
			out.OpenPositions++
		}
	}
	return out, nil
}

// futuresMode is the position mode a futures order is placed for: the one read within
// ModeTTL, else read now. Reading it lazily keeps spot-only accounts (and keys without
// futures permission) free of the call.
func (c *client) futuresMode(ctx context.Context) (exchange.PositionMode, *failure) {
	c.modeMu.Lock()
	mode, at := c.mode, c.modeAt
	c.modeMu.Unlock()
	if mode != "" && time.Since(at) < c.cfg.ModeTTL {
		return mode, nil
	}
	return c.readMode(ctx)
}

// readMode reads the position mode and keeps it. Concurrent readers may both read: the
// answer is the same, and the last one kept is no older than the other.
func (c *client) readMode(ctx context.Context) (exchange.PositionMode, *failure) {
	var res *futures.PositionMode
	if f := c.do(ctx, futuresAPI, "GET /fapi/v1/positionSide/dual", true, func(ctx context.Context) error {
		var err error
		res, err = c.fut().NewGetPositionModeService().Do(ctx, futures.WithRecvWindow(c.recvWindowMS()))
		return err
	}); f != nil {
		return "", f
	}
	mode := exchange.OneWay
	if res.DualSidePosition {
		mode = exchange.Hedge
	}
	c.modeMu.Lock()
	c.mode, c.modeAt = mode, time.Now()
	c.modeMu.Unlock()
	return mode, nil
}

// forgetMode drops the mode read, after Binance refused an order for it: the next futures
// order reads it again.
func (c *client) forgetMode() {
	c.modeMu.Lock()
	c.mode, c.modeAt = "", time.Time{}
	c.modeMu.Unlock()
}
