package bybit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// walletCoin is a coin of /v5/account/wallet-balance.
type walletCoin struct {
	Coin            string `json:"coin"`
	WalletBalance   num    `json:"walletBalance"`
	Locked          num    `json:"locked"`
	TotalOrderIM    num    `json:"totalOrderIM"`
	TotalPositionIM num    `json:"totalPositionIM"`
	UnrealisedPnl   num    `json:"unrealisedPnl"`
}

// Balance implements exchange.Exchange for the unified account (accountType=UNIFIED). Free
// is what is neither locked by spot orders nor margin of orders and positions, less any
// unrealised loss: walletBalance − locked − totalOrderIM − totalPositionIM + min(uPnL, 0),
// never below zero; Locked is the rest of walletBalance. A coin Bybit does not list (it
// omits zero balances) is zero.
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
	var res struct {
		List []struct {
			AccountType string       `json:"accountType"`
			Coin        []walletCoin `json:"coin"`
		} `json:"list"`
	}
	q := url.Values{"accountType": {"UNIFIED"}, "coin": {asset}}
	if err := c.call(ctx, request{method: http.MethodGet, path: "/v5/account/wallet-balance", query: q.Encode(), private: true}, true, 0, &res); err != nil {
		return out, c.typed(err, "wallet balance")
	}
	for _, acct := range res.List {
		for _, w := range acct.Coin {
			if !strings.EqualFold(w.Coin, asset) {
				continue
			}
			wallet := w.WalletBalance.Dec()
			free := wallet.Sub(w.Locked.Dec()).Sub(w.TotalOrderIM.Dec()).Sub(w.TotalPositionIM.Dec())
			if upl := w.UnrealisedPnl.Dec(); upl.IsNegative() {
				free = free.Add(upl)
			}
			if free.IsNegative() {
				free = decimal.Zero
			}
			if free.GreaterThan(wallet) {
				free = wallet
			}
			out.Free = free
			if locked := wallet.Sub(free); locked.IsPositive() {
				out.Locked = locked
			}
			return out, nil
		}
	}
	return out, nil
}

// apiKeyInfo is the result of /v5/user/query-api.
type apiKeyInfo struct {
	ReadOnly    int                 `json:"readOnly"`
	Permissions map[string][]string `json:"permissions"`
	IPs         []string            `json:"ips"`
}

// Permissions implements exchange.Live from /v5/user/query-api, which any key may call:
//
//   - Read: the call succeeded.
//   - SpotTrade: Spot holds SpotTrade and the key is not read-only.
//   - FuturesTrade: ContractTrade holds Order and Position, and the key is not read-only.
//     ContractTrade is the contract-trading permission (USDT contracts), in two parts:
//     Order places and cancels orders, Position sets leverage, which every leveraged entry
//     does first. Derivatives [DerivativesTrade] says nothing: Bybit adds it to every
//     unified account's key by itself, so a key with no contract permission would pass
//     and fail on its first order.
//   - Withdraw: Wallet holds Withdraw (master accounts' keys).
//   - Transfer: Wallet holds AccountTransfer, SubMemberTransfer or SubMemberTransferList.
//     Withdraw and Transfer are reported as listed even on a read-only key: over-reporting
//     a permission that moves funds is the safe side.
//   - IPRestricted: ips is set and is not "*".
//
// A refused key (10003, 10004, 33004, ...) is ErrInvalidCredentials; no answer, 5xx or an
// IP ban is ErrUnreachable.
func (a *Account) Permissions(ctx context.Context) (exchange.Permissions, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c := a.spot
	var info apiKeyInfo
	if err := c.call(ctx, request{method: http.MethodGet, path: "/v5/user/query-api", private: true}, true, 0, &info); err != nil {
		return exchange.Permissions{}, c.typed(err, "API key information")
	}
	return permissionsOf(info), nil
}

func permissionsOf(info apiKeyInfo) exchange.Permissions {
	has := func(group string, names ...string) bool {
		for _, n := range info.Permissions[group] {
			if slices.ContainsFunc(names, func(want string) bool { return strings.EqualFold(n, want) }) {
				return true
			}
		}
		return false
	}
	writable := info.ReadOnly == 0
	p := exchange.Permissions{
		Read:         true,
		SpotTrade:    writable && has("Spot", "SpotTrade"),
		FuturesTrade: writable && has("ContractTrade", "Order") && has("ContractTrade", "Position"),
		Withdraw:     has("Wallet", "Withdraw"),
		Transfer:     has("Wallet", "AccountTransfer", "SubMemberTransfer", "SubMemberTransferList"),
	}
	for _, ip := range info.IPs {
		if ip = strings.TrimSpace(ip); ip != "" && ip != "*" {
			p.IPRestricted = true
		}
	}
	return p
}

// SetLeverage implements exchange.Exchange: /v5/position/set-leverage with the same buy and
// sell leverage (in hedge mode, both sides alike). "Leverage not modified" (110043) is
// success.
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
		return errs.New(errs.InvalidAmount, "leverage must be between 1 and %s on bybit %s", m.maxLeverage, m.info.Symbol)
	}
	lev := strconv.Itoa(leverage)
	body, err := json.Marshal(struct {
		Category     string `json:"category"`
		Symbol       string `json:"symbol"`
		BuyLeverage  string `json:"buyLeverage"`
		SellLeverage string `json:"sellLeverage"`
	}{"linear", m.raw, lev, lev})
	if err != nil {
		return err
	}
	c := a.linear
	// Setting the same leverage twice is harmless: retried like a read.
	err = c.call(ctx, request{method: http.MethodPost, path: "/v5/position/set-leverage", body: body, private: true}, true, 0, nil)
	if codeOf(err) == 110043 {
		return nil
	}
	return c.typed(err, "set leverage")
}
