package okx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// balanceDetail is a currency of /api/v5/account/balance.
type balanceDetail struct {
	Ccy       string `json:"ccy"`
	CashBal   num    `json:"cashBal"`
	AvailBal  num    `json:"availBal"`
	FrozenBal num    `json:"frozenBal"`
	Upl       num    `json:"upl"`
}

// Balance implements exchange.Exchange from the trading account: Free is availBal (what
// neither orders nor positions hold) less any unrealised loss of the currency's cross
// positions, never below zero; Locked is frozenBal. A currency OKX does not list (it omits
// zero balances) is zero.
func (a *Account) Balance(ctx context.Context, asset string) (exchange.Balance, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	return a.balance(ctx, asset)
}

func (a *Account) balance(ctx context.Context, asset string) (exchange.Balance, error) {
	asset = strings.ToUpper(strings.TrimSpace(asset))
	out := exchange.Balance{Asset: asset}
	if asset == "" {
		return out, errs.New(errs.InvalidSymbol, "no asset given")
	}
	c := a.spot
	var res []struct {
		Details []balanceDetail `json:"details"`
	}
	q := url.Values{"ccy": {asset}}.Encode()
	if err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/account/balance", query: q, private: true}, true, 0, &res); err != nil {
		return out, c.typed(err, "balance")
	}
	for _, acct := range res {
		for _, d := range acct.Details {
			if !strings.EqualFold(d.Ccy, asset) {
				continue
			}
			free := d.AvailBal.Dec()
			if d.AvailBal == "" {
				free = d.CashBal.Dec().Sub(d.FrozenBal.Dec())
			}
			if upl := d.Upl.Dec(); upl.IsNegative() {
				free = free.Add(upl)
			}
			if free.IsNegative() {
				free = decimal.Zero
			}
			out.Free = free
			if locked := d.FrozenBal.Dec(); locked.IsPositive() {
				out.Locked = locked
			}
			return out, nil
		}
	}
	return out, nil
}

// accountConfig is the part of /api/v5/account/config sigops reads.
type accountConfig struct {
	AcctLv  string `json:"acctLv"`
	PosMode string `json:"posMode"`
	Perm    string `json:"perm"`
	IP      string `json:"ip"`
}

func (a *Account) config(ctx context.Context) (accountConfig, error) {
	c := a.spot
	var res []accountConfig
	if err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/account/config", private: true}, true, 0, &res); err != nil {
		return accountConfig{}, c.typed(err, "account configuration")
	}
	if len(res) == 0 {
		return accountConfig{}, errs.New(errs.ExchangeError, "okx answered no account configuration")
	}
	return res[0], nil
}

// Permissions implements exchange.Live from /api/v5/account/config, which any key may call:
//
//   - Read: the call succeeded.
//   - SpotTrade and FuturesTrade: perm holds trade (OKX has one trade permission).
//   - Withdraw: perm holds withdraw.
//   - Transfer: false. OKX has no permission of its own for transfers: its funds transfer
//     endpoint takes a trade key, which moves funds only between the key's own accounts
//     (and, from a master account, its sub-accounts), never out of OKX.
//   - IPRestricted: ip is set.
//
// A refused key (50111, 50113, 50105, ...) is ErrInvalidCredentials; no answer or 5xx is
// ErrUnreachable.
func (a *Account) Permissions(ctx context.Context) (exchange.Permissions, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	cfg, err := a.config(ctx)
	if err != nil {
		return exchange.Permissions{}, err
	}
	a.storeMode(cfg.PosMode)
	return permissionsOf(cfg), nil
}

func permissionsOf(cfg accountConfig) exchange.Permissions {
	p := exchange.Permissions{Read: true}
	for _, perm := range strings.Split(cfg.Perm, ",") {
		switch strings.ToLower(strings.TrimSpace(perm)) {
		case "trade":
			p.SpotTrade, p.FuturesTrade = true, true
		case "withdraw":
			p.Withdraw = true
		}
	}
	p.IPRestricted = strings.TrimSpace(cfg.IP) != ""
	return p
}

// modeOf maps OKX's posMode; "" for anything else.
func modeOf(posMode string) exchange.PositionMode {
	switch posMode {
	case "long_short_mode":
		return exchange.Hedge
	case "net_mode":
		return exchange.OneWay
	}
	return ""
}

// storeMode keeps a posMode just read.
func (a *Account) storeMode(posMode string) {
	if m := modeOf(posMode); m != "" {
		a.mu.Lock()
		a.mode, a.modeAt = m, a.now()
		a.mu.Unlock()
	}
}

// dropMode forgets the position mode: OKX refused an order's posSide, so the account's mode
// is not what was read; the next swap order reads it again.
func (a *Account) dropMode() {
	a.mu.Lock()
	a.mode = ""
	a.mu.Unlock()
}

// positionMode is the account's position mode for a swap order: the one read within
// ModeTTL, else read now from /api/v5/account/config.
func (a *Account) positionMode(ctx context.Context) (exchange.PositionMode, error) {
	a.mu.Lock()
	m, at := a.mode, a.modeAt
	a.mu.Unlock()
	if m != "" && a.now().Sub(at) < a.modeTTL {
		return m, nil
	}
	cfg, err := a.config(ctx)
	if err != nil {
		return "", err
	}
	m = modeOf(cfg.PosMode)
	if m == "" {
		return "", errs.New(errs.ExchangeError, "okx reports an unknown position mode %q", cfg.PosMode)
	}
	a.storeMode(cfg.PosMode)
	return m, nil
}

// AccountMode implements exchange.ModeReader: posMode from /api/v5/account/config
// (long_short_mode is exchange.Hedge, net_mode exchange.OneWay) and the number of open
// swap positions (pos not zero, either side) from /api/v5/account/positions. The mode read
// is also the one the account places its next orders in.
func (a *Account) AccountMode(ctx context.Context) (exchange.AccountMode, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	cfg, err := a.config(ctx)
	if err != nil {
		return exchange.AccountMode{}, err
	}
	mode := modeOf(cfg.PosMode)
	if mode == "" {
		return exchange.AccountMode{}, errs.New(errs.ExchangeError, "okx reports an unknown position mode %q", cfg.PosMode)
	}
	a.storeMode(cfg.PosMode)
	c := a.swap
	var positions []struct {
		InstID string `json:"instId"`
		Pos    num    `json:"pos"`
	}
	q := url.Values{"instType": {"SWAP"}}.Encode()
	if err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/account/positions", query: q, private: true}, true, 0, &positions); err != nil {
		return exchange.AccountMode{}, c.typed(err, "positions")
	}
	open := 0
	for _, p := range positions {
		if !p.Pos.Dec().IsZero() {
			open++
		}
	}
	return exchange.AccountMode{Mode: mode, OpenPositions: open}, nil
}

// SetLeverage implements exchange.Exchange: /api/v5/account/set-leverage with mgnMode
// cross (the margin mode of every swap order sigops places), which sets the instrument's
// leverage for both position sides in either position mode.
func (a *Account) SetLeverage(ctx context.Context, symbol string, leverage int) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	m, err := a.market(ctx, exchange.Futures, symbol)
	if err != nil {
		return err
	}
	return a.setLeverage(ctx, m, leverage)
}

func (a *Account) setLeverage(ctx context.Context, m *market, leverage int) error {
	if leverage < 1 || (m.maxLeverage.IsPositive() && decimal.NewFromInt(int64(leverage)).GreaterThan(m.maxLeverage)) {
		return errs.New(errs.InvalidAmount, "leverage must be between 1 and %s on okx %s", m.maxLeverage, m.info.Symbol)
	}
	body, err := json.Marshal(struct {
		InstID  string `json:"instId"`
		Lever   string `json:"lever"`
		MgnMode string `json:"mgnMode"`
	}{m.raw, strconv.Itoa(leverage), "cross"})
	if err != nil {
		return err
	}
	c := a.swap
	// Setting the same leverage twice is harmless: retried like a read.
	if err := c.call(ctx, request{method: http.MethodPost, path: "/api/v5/account/set-leverage", body: body, private: true}, true, 0, nil); err != nil {
		return c.typed(err, "set leverage")
	}
	a.mu.Lock()
	a.leverage[m.raw] = leverage
	a.mu.Unlock()
	return nil
}

// ensureLeverage sets an entry's leverage unless this account already set that value.
func (a *Account) ensureLeverage(ctx context.Context, m *market, leverage int) error {
	a.mu.Lock()
	done := a.leverage[m.raw] == leverage
	a.mu.Unlock()
	if done {
		return nil
	}
	return a.setLeverage(ctx, m, leverage)
}
