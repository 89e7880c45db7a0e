package bybitfake

import (
	"encoding/json"
	"sort"
	"strconv"
)

// Position modes as POST /v5/position/switch-mode names them ("mode").
const (
	MergedSingle = 0 // one-way: one position per symbol, positionIdx 0
	BothSides    = 3 // hedge: a long (positionIdx 1) and a short (2) per symbol
)

// posKey names a position: a symbol and its positionIdx.
type posKey struct {
	symbol string
	idx    int
}

// hedgeable: Bybit offers hedge mode on USDT perpetuals only (switch-mode's table: USDT
// futures and USDC contracts are one-way only).
func hedgeable(in *instrument) bool {
	return in != nil && in.category == "linear" && in.settle == "USDT" && in.contractType == "LinearPerpetual"
}

// modeOf is a linear symbol's position mode: its own once set, else its settle coin's,
// else one-way (Bybit's default).
func (s *Server) modeOf(symbol string) int {
	if m, ok := s.symbolMode[symbol]; ok {
		return m
	}
	if in := findInstrument("linear", symbol); hedgeable(in) {
		return s.coinMode[in.settle]
	}
	return MergedSingle
}

// SetPositionMode sets the position mode of every USDT perpetual (MergedSingle or
// BothSides), as the account's owner would on the website; unlike switch-mode it is never
// refused, so that a test can change the mode under open positions and orders.
func (s *Server) SetPositionMode(mode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.coinMode["USDT"] = mode
	for sym := range s.symbolMode {
		if hedgeable(findInstrument("linear", sym)) {
			delete(s.symbolMode, sym)
		}
	}
}

// PositionMode is a linear symbol's position mode (MergedSingle or BothSides).
func (s *Server) PositionMode(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modeOf(symbol)
}

// busy reports whether a symbol holds a position or an open order: Bybit does not switch
// the mode of such a symbol.
func (s *Server) busy(symbol string) (position, orders bool) {
	for k := range s.positions {
		if k.symbol == symbol {
			position = true
		}
	}
	for _, o := range s.orders {
		if o.category == "linear" && o.symbol == symbol && !o.finished() {
			orders = true
		}
	}
	return position, orders
}

// switchMode is POST /v5/position/switch-mode (category linear; symbol, or coin for every
// symbol of that settle coin; mode 0 or 3). A symbol is refused while it holds a position
// (110024) or open orders (110028), hedge mode where Bybit does not offer it (110029), and
// the mode it already has (110025). By coin, Bybit switches the symbols that are free and
// leaves the others as they are; the fake does the same, keeping those at their mode.
func (s *Server) switchMode(_ map[string]string, body []byte) (any, *failure) {
	var r struct {
		Category string `json:"category"`
		Symbol   string `json:"symbol"`
		Coin     string `json:"coin"`
		Mode     *int   `json:"mode"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fail(10001, "params error: %v", err)
	}
	switch {
	case r.Category != "linear":
		return nil, fail(10001, "params error: category invalid")
	case r.Mode == nil || (*r.Mode != MergedSingle && *r.Mode != BothSides):
		return nil, fail(10001, "params error: mode invalid")
	case r.Symbol == "" && r.Coin == "":
		return nil, fail(10001, "params error: symbol or coin is required")
	}
	mode := *r.Mode
	if r.Symbol != "" {
		in := findInstrument("linear", r.Symbol)
		switch position, orders := s.busy(r.Symbol); {
		case in == nil:
			return nil, fail(10001, "params error: symbol invalid")
		case mode == BothSides && !hedgeable(in):
			return nil, fail(110029, "Hedge mode is not supported for this symbol.")
		case s.modeOf(r.Symbol) == mode:
			return nil, fail(110025, "Position mode has not been modified.")
		case position:
			return nil, fail(110024, "You have an existing position, so the position mode cannot be switched.")
		case orders:
			return nil, fail(110028, "You have existing open orders, so the position mode cannot be switched.")
		}
		s.symbolMode[r.Symbol] = mode
		return map[string]any{}, nil
	}
	if r.Coin != "USDT" {
		if mode == BothSides {
			return nil, fail(110029, "Hedge mode is not supported for this symbol.")
		}
		return nil, fail(110025, "Position mode has not been modified.")
	}
	changed := false
	for i := range catalogue {
		in := &catalogue[i]
		if !hedgeable(in) {
			continue
		}
		position, orders := s.busy(in.symbol)
		if position || orders {
			// Left as it is: pinned at its present mode.
			s.symbolMode[in.symbol] = s.modeOf(in.symbol)
			continue
		}
		if s.modeOf(in.symbol) != mode {
			changed = true
		}
		delete(s.symbolMode, in.symbol)
	}
	if s.coinMode[r.Coin] != mode {
		changed = true
	}
	s.coinMode[r.Coin] = mode
	if !changed {
		return nil, fail(110025, "Position mode has not been modified.")
	}
	return map[string]any{}, nil
}

// positionList is GET /v5/position/list for linear. With symbol it answers that symbol's
// positions whether held or not (one entry in one-way mode, positionIdx 0; two in hedge
// mode, 1 and 2); with settleCoin only the positions whose size is above zero. Either is
// required. Paged by limit (1-200, default 20) and cursor.
func (s *Server) positionList(q map[string]string, _ []byte) (any, *failure) {
	if q["category"] != "linear" {
		return nil, fail(10001, "params error: category invalid")
	}
	limit := 20
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			return nil, fail(10001, "params error: limit invalid")
		}
		limit = n
	}
	var keys []posKey
	switch {
	case q["symbol"] != "":
		in := findInstrument("linear", q["symbol"])
		if in == nil {
			return nil, fail(10001, "params error: symbol invalid")
		}
		keys = []posKey{{in.symbol, 0}}
		if s.modeOf(in.symbol) == BothSides {
			keys = []posKey{{in.symbol, 1}, {in.symbol, 2}}
		}
	case q["settleCoin"] != "":
		for k, p := range s.positions {
			if in := findInstrument("linear", k.symbol); in != nil && in.settle == q["settleCoin"] && !p.size.IsZero() {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].symbol != keys[j].symbol {
				return keys[i].symbol < keys[j].symbol
			}
			return keys[i].idx < keys[j].idx
		})
	default:
		return nil, fail(10001, "params error: symbol or settleCoin is required")
	}
	start, _ := strconv.Atoi(q["cursor"])
	start = min(max(start, 0), len(keys))
	end := min(start+limit, len(keys))
	next := ""
	if end < len(keys) {
		next = strconv.Itoa(end)
	}
	list := []map[string]any{}
	for _, k := range keys[start:end] {
		list = append(list, s.positionJSON(k))
	}
	return map[string]any{"category": "linear", "list": list, "nextPageCursor": next}, nil
}

func (s *Server) positionJSON(k posKey) map[string]any {
	p := s.positions[k]
	if p == nil {
		p = &position{}
	}
	side := ""
	switch p.size.Sign() {
	case 1:
		side = "Buy"
	case -1:
		side = "Sell"
	}
	mark := s.price(k.symbol)
	avg := "0"
	if !p.size.IsZero() {
		avg = p.entry.String()
	}
	return map[string]any{
		"positionIdx": k.idx, "riskId": 1, "riskLimitValue": "2000000", "symbol": k.symbol, "side": side,
		"size": p.size.Abs().String(), "avgPrice": avg, "positionValue": p.entry.Mul(p.size.Abs()).String(),
		"tradeMode": 0, "autoAddMargin": 0, "positionStatus": "Normal", "leverage": strconv.Itoa(s.lev(k.symbol)),
		"markPrice": mark.String(), "liqPrice": "", "bustPrice": "", "positionIM": p.margin.String(),
		"positionMM": "0", "positionBalance": p.margin.String(), "takeProfit": "", "stopLoss": "",
		"trailingStop": "0", "sessionAvgPrice": "", "unrealisedPnl": mark.Sub(p.entry).Mul(p.size).String(),
		"curRealisedPnl": "0", "cumRealisedPnl": "0", "adlRankIndicator": 0, "isReduceOnly": false,
		"mmrSysUpdatedTime": "", "leverageSysUpdatedTime": "", "seq": -1,
		"createdTime": strconv.FormatInt(p.created, 10), "updatedTime": strconv.FormatInt(p.updated, 10),
		"tpslMode": "Full", "delta": "", "gamma": "", "vega": "", "theta": "",
	}
}
