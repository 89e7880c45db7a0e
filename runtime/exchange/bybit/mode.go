package bybit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// DefaultModeTTL is how long a position mode read from Bybit is used before it is read
// again.
const DefaultModeTTL = time.Minute

// modeProbe is the symbol whose position mode stands for the account's when it holds no
// position: Bybit's position list by settle coin shows only positions held, and a symbol
// without position or orders follows the settle coin's mode. BTCUSDT is listed on every
// Bybit host (mainnet, testnet, demo).
const modeProbe = "BTCUSDT"

// posEntry is an item of /v5/position/list.
type posEntry struct {
	Symbol      string `json:"symbol"`
	PositionIdx int    `json:"positionIdx"`
	Size        num    `json:"size"`
}

// modes is the position mode of each linear symbol as last read. Bybit keeps the mode per
// symbol (a USDT-wide switch leaves the symbols that hold positions or orders as they
// were), so the mode an order is built for is its own symbol's.
type modes struct {
	mu       sync.Mutex
	ttl      time.Duration
	bySymbol map[string]modeRead
}

type modeRead struct {
	mode exchange.PositionMode
	at   time.Time
}

func (m *modes) get(symbol string) (exchange.PositionMode, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.bySymbol[symbol]
	if !ok || time.Since(r.at) >= m.ttl {
		return "", false
	}
	return r.mode, true
}

func (m *modes) put(symbol string, mode exchange.PositionMode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bySymbol == nil {
		m.bySymbol = map[string]modeRead{}
	}
	m.bySymbol[symbol] = modeRead{mode: mode, at: time.Now()}
}

// forget drops every mode read: Bybit said one no longer holds, and a switch by settle
// coin changes many symbols at once.
func (m *modes) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bySymbol = nil
}

// modeOfEntries: positionIdx 1 and 2 exist only in hedge mode.
func modeOfEntries(list []posEntry) exchange.PositionMode {
	for _, p := range list {
		if p.PositionIdx == 1 || p.PositionIdx == 2 {
			return exchange.Hedge
		}
	}
	return exchange.OneWay
}

// positions reads /v5/position/list for linear with the given filter (symbol, or
// settleCoin), every page.
func (a *Account) positions(ctx context.Context, filter url.Values) ([]posEntry, error) {
	c := a.linear
	var out []posEntry
	cursor := ""
	for page := 0; page < 20; page++ {
		q := url.Values{"category": {"linear"}, "limit": {"200"}}
		for k, v := range filter {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var res struct {
			List           []posEntry `json:"list"`
			NextPageCursor string     `json:"nextPageCursor"`
		}
		if err := c.call(ctx, request{method: http.MethodGet, path: "/v5/position/list", query: q.Encode(), private: true}, true, 0, &res); err != nil {
			return nil, c.typed(err, "position list")
		}
		out = append(out, res.List...)
		if res.NextPageCursor == "" || len(res.List) == 0 {
			break
		}
		cursor = res.NextPageCursor
	}
	return out, nil
}

// symbolMode is the position mode of a linear symbol for placing an order: the one read
// within ModeTTL, else read now from /v5/position/list?symbol=, which lists a symbol's
// positions whether held or not (positionIdx 0 in one-way mode, 1 and 2 in hedge mode).
func (a *Account) symbolMode(ctx context.Context, m *market) (exchange.PositionMode, error) {
	if mode, ok := a.modes.get(m.raw); ok {
		return mode, nil
	}
	list, err := a.positions(ctx, url.Values{"symbol": {m.raw}})
	if err != nil {
		return "", err
	}
	mode := modeOfEntries(list)
	a.modes.put(m.raw, mode)
	return mode, nil
}

// AccountMode implements exchange.ModeReader. Bybit has no endpoint that reads a position
// mode; /v5/position/list shows it in each position's positionIdx (0 one-way, 1 and 2
// hedge). The USDT perpetuals' positions are read (settleCoin=USDT: USDC contracts are
// one-way only), and OpenPositions counts those with a size above zero, each side of a
// hedge-mode symbol apart. Mode is Hedge when any of them is a hedge-mode position. When
// none is held, Bybit's list is empty and the mode is read from BTCUSDT instead (modeProbe).
// What is read is kept for placing orders.
func (a *Account) AccountMode(ctx context.Context) (exchange.AccountMode, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	list, err := a.positions(ctx, url.Values{"settleCoin": {"USDT"}})
	if err != nil {
		return exchange.AccountMode{}, err
	}
	out := exchange.AccountMode{Mode: modeOfEntries(list)}
	bySymbol := map[string][]posEntry{}
	for _, p := range list {
		if p.Size.Dec().IsPositive() {
			out.OpenPositions++
		}
		bySymbol[p.Symbol] = append(bySymbol[p.Symbol], p)
	}
	for sym, entries := range bySymbol {
		a.modes.put(sym, modeOfEntries(entries))
	}
	if len(list) == 0 {
		probe, err := a.positions(ctx, url.Values{"symbol": {modeProbe}})
		if err != nil {
			return exchange.AccountMode{}, err
		}
		out.Mode = modeOfEntries(probe)
		a.modes.put(modeProbe, out.Mode)
	}
	return out, nil
}

// modeMismatch reports Bybit's refusal of a positionIdx that is not the symbol's mode: the
// generic parameter error 10001 with "position idx not match position mode".
func modeMismatch(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == 10001 && strings.Contains(strings.ToLower(ae.msg), "position idx")
}

// refusedForMode is the EXCHANGE_ERROR of an order refused for its positionIdx.
func refusedForMode(err error, body []byte, m *market) error {
	var b struct {
		PositionIdx *int `json:"positionIdx"`
	}
	idx := "none"
	if json.Unmarshal(body, &b) == nil && b.PositionIdx != nil {
		idx = strconv.Itoa(*b.PositionIdx)
	}
	short := err.Error()
	var ae *apiError
	if errors.As(err, &ae) {
		short = ae.short()
	}
	return errs.Wrap(err, errs.ExchangeError,
		"the account's position mode changed: bybit refused positionIdx %s for %s (%s); the mode is read again for the next order",
		idx, m.info.Symbol, short)
}
