package binancefake

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"

	"github.com/shopspring/decimal"
)

// conditionalTypes are refused on /fapi/v1/order since Binance moved them to the Algo
// Order API.
var conditionalTypes = map[string]bool{"STOP": true, "STOP_MARKET": true, "TAKE_PROFIT": true,
	"TAKE_PROFIT_MARKET": true, "TRAILING_STOP_MARKET": true}

// available is the futures wallet minus the margin of the open positions.
func (s *Server) available(asset string) decimal.Decimal {
	out := s.futWallet[asset]
	for k, p := range s.positions {
		if m := futMarket(k.symbol); m != nil && m.quote == asset && !p.amt.IsZero() {
			out = out.Sub(p.amt.Abs().Mul(p.entry).DivRound(decimal.NewFromInt(int64(s.lev(k.symbol))), 8))
		}
	}
	return out
}

// The answers about position sides (USDⓈ-M error codes; RULES.md).
const (
	msgSideMismatch          = "Order's position side does not match user's setting."
	msgReduceOnlyNotRequired = "Parameter 'reduceonly' sent when not required."
)

// positionSide checks an order's positionSide and reduceOnly against the account's mode and
// returns the side of the position it acts on: in one-way mode positionSide is absent or
// BOTH (BOTH is its default), in hedge mode it must be LONG or SHORT, and reduceOnly may
// not be sent at all (the side and positionSide make an order an exit).
func (s *Server) positionSide(p url.Values) (string, *apiErr) {
	ps := p.Get("positionSide")
	switch ps {
	case "", "BOTH", "LONG", "SHORT":
	default:
		return "", reject(-4060, "Invalid position side.")
	}
	if !s.hedge {
		if ps == "LONG" || ps == "SHORT" {
			return "", reject(-4061, msgSideMismatch)
		}
		return "BOTH", nil
	}
	if ps != "LONG" && ps != "SHORT" {
		return "", reject(-4061, msgSideMismatch)
	}
	if p.Has("reduceOnly") {
		return "", reject(-1106, msgReduceOnlyNotRequired)
	}
	return ps, nil
}

// hedgeExit: in hedge mode, a sell on the long side or a buy on the short side closes.
func hedgeExit(positionSide, side string) bool {
	return (positionSide == "LONG" && side == "SELL") || (positionSide == "SHORT" && side == "BUY")
}

// checkClientID refuses a client order ID outside Binance's pattern: too long (with legal
// characters) is futures' -4015, anything else -1100 naming the parameter.
func checkClientID(name, cid string) *apiErr {
	if clientIDRE.MatchString(cid) {
		return nil
	}
	if len(cid) > 36 && clientIDRE.MatchString(cid[:36]) && clientIDRE.MatchString(cid[36:]) {
		return reject(-4015, "Client order id length should not be more than 36 chars")
	}
	return illegalClientID(name)
}

func illegalClientID(name string) *apiErr {
	return reject(-1100, "Illegal characters found in parameter '"+name+"'; legal range is '^[\\.A-Z\\:/a-z0-9_-]{1,36}$'.")
}

// checkQty validates a futures quantity against the symbol.
func checkQty(m *mkt, qty decimal.Decimal, qs string) *apiErr {
	switch {
	case decimals(qs) > m.qtyPrec:
		return reject(-1111, "Precision is over the maximum defined for this asset.")
	case !qty.IsPositive():
		return reject(-4003, "Quantity less than or equal to zero.")
	case qty.LessThan(m.minQty):
		return reject(-4004, "Quantity less than min quantity.")
	case !multiple(qty, m.step):
		return reject(-4023, "Qty not increased by step size.")
	}
	return nil
}

// checkPrice validates a futures price (or trigger price) against the symbol.
func checkPrice(m *mkt, price decimal.Decimal, ps string) *apiErr {
	switch {
	case decimals(ps) > m.pricePrec:
		return reject(-1111, "Precision is over the maximum defined for this asset.")
	case price.LessThan(m.minPrice):
		return reject(-4013, "Price less than min price.")
	case !multiple(price, m.tick):
		return reject(-4014, "Price not increased by tick size.")
	}
	return nil
}

func (s *Server) futuresNewOrder(c *call) (any, *apiErr) {
	p := c.params
	typ := p.Get("type")
	if conditionalTypes[typ] {
		return nil, reject(-4120, "Order type not supported for this endpoint. Please use the Algo Order API endpoints instead.")
	}
	if typ != "MARKET" && typ != "LIMIT" {
		return nil, reject(-1116, "Invalid orderType.")
	}
	sym, side := p.Get("symbol"), p.Get("side")
	m := futMarket(sym)
	if m == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	if m.status != "TRADING" {
		return nil, reject(-1122, "Invalid symbol status.")
	}
	if side != "BUY" && side != "SELL" {
		return nil, reject(-1117, "Invalid side.")
	}
	posSide, e := s.positionSide(p)
	if e != nil {
		return nil, e
	}
	cid := p.Get("newClientOrderId")
	if cid == "" {
		cid = "web_" + strconv.FormatInt(s.nextID+1, 10)
	}
	if e := checkClientID("newClientOrderId", cid); e != nil {
		return nil, e
	}
	if s.openWithClientID(true, cid) {
		return nil, reject(-4116, "ClientOrderId is duplicated.")
	}
	qty, qs, e := parseDec(c, "quantity")
	if e != nil {
		return nil, e
	}
	if e := checkQty(m, qty, qs); e != nil {
		return nil, e
	}
	o := &order{futures: true, cid: cid, symbol: sym, side: side, positionSide: posSide, typ: typ,
		tif: "GTC", status: "NEW", orig: qty, executed: decimal.Zero, cumQuote: decimal.Zero, price: decimal.Zero,
		stop: decimal.Zero, reduceOnly: p.Get("reduceOnly") == "true"}
	if typ == "LIMIT" {
		price, ps, e := parseDec(c, "price")
		if e != nil {
			return nil, e
		}
		if e := checkPrice(m, price, ps); e != nil {
			return nil, e
		}
		if o.tif = p.Get("timeInForce"); o.tif == "" {
			return nil, mandatory("timeInForce")
		}
		o.price = price
	}
	market := s.prices[sym]
	ref := market
	if typ == "LIMIT" {
		ref = o.price
	}
	if e := s.futuresAdmit(m, side, posSide, qty, ref, o.reduceOnly); e != nil {
		return nil, e
	}
	o.id = s.id()
	o.created = s.now()
	o.updated = o.created
	s.add(o)
	s.placed[cid]++
	if typ == "MARKET" || marketable(side, o.price, market) {
		s.fillFutures(o, market)
	}
	return s.futuresOrderJSON(o), nil
}

// futuresAdmit applies the reduce-only, notional and margin checks of a new order. In hedge
// mode an order that closes its side (hedgeExit) is reduce-only by nature: it may not be
// larger than the position, as Binance refuses closing more than is held.
func (s *Server) futuresAdmit(m *mkt, side, positionSide string, qty, ref decimal.Decimal, reduceOnly bool) *apiErr {
	pos := s.positions[posKey{m.symbol, positionSide}]
	amt := decimal.Zero
	if pos != nil {
		amt = pos.amt
	}
	closing := decimal.Zero // the part of the order that reduces the position
	if (side == "BUY" && amt.IsNegative()) || (side == "SELL" && amt.IsPositive()) {
		closing = decimal.Min(qty, amt.Abs())
	}
	if reduceOnly || hedgeExit(positionSide, side) {
		if closing.IsZero() || qty.GreaterThan(amt.Abs()) {
			return reject(-2022, "ReduceOnly Order is rejected.")
		}
		return nil
	}
	if qty.Mul(ref).LessThan(m.minNotional) {
		return reject(-4164, fmt.Sprintf("Order's notional must be no smaller than %s (unless you choose reduce only).", m.minNotional))
	}
	opening := qty.Sub(closing)
	required := opening.Mul(ref).DivRound(decimal.NewFromInt(int64(s.lev(m.symbol))), 8).Add(qty.Mul(ref).Mul(s.futFee))
	if s.available(m.quote).LessThan(required) {
		return reject(-2019, "Margin is insufficient.")
	}
	return nil
}

// fillFutures fills the rest of o at price: the position of o's side moves (one-way: the
// net position, which can flip; hedge: the long or the short one, which never flips),
// realised PnL and the fee (in USDT) settle in the wallet. A reduce-only order (or a hedge
// exit) that no longer reduces expires.
func (s *Server) fillFutures(o *order, price decimal.Decimal) {
	m := futMarket(o.symbol)
	qty := o.orig.Sub(o.executed)
	now := s.now()
	o.updated = now
	key := posKey{o.symbol, o.positionSide}
	pos := s.positions[key]
	if pos == nil {
		pos = &position{}
		s.positions[key] = pos
	}
	signed := qty
	if o.side == "SELL" {
		signed = qty.Neg()
	}
	exit := o.reduceOnly || hedgeExit(o.positionSide, o.side)
	if exit && (pos.amt.IsZero() || pos.amt.Sign() == signed.Sign() || qty.GreaterThan(pos.amt.Abs())) {
		o.status = "EXPIRED"
		return
	}
	realized := decimal.Zero
	if !pos.amt.IsZero() && pos.amt.Sign() != signed.Sign() {
		closing := decimal.Min(qty, pos.amt.Abs())
		realized = closing.Mul(price.Sub(pos.entry))
		if pos.amt.IsNegative() {
			realized = realized.Neg()
		}
		rest := qty.Sub(closing)
		if pos.amt.IsPositive() {
			pos.amt = pos.amt.Sub(closing)
		} else {
			pos.amt = pos.amt.Add(closing)
		}
		if pos.amt.IsZero() {
			pos.entry = decimal.Zero
		}
		if rest.IsPositive() {
			pos.amt = rest
			if o.side == "SELL" {
				pos.amt = rest.Neg()
			}
			pos.entry = price
		}
	} else {
		n := pos.amt.Abs().Add(qty)
		pos.entry = pos.amt.Abs().Mul(pos.entry).Add(qty.Mul(price)).DivRound(n, 8)
		pos.amt = pos.amt.Add(signed)
	}
	notional := qty.Mul(price)
	fee := notional.Mul(s.futFee).Truncate(8)
	s.futWallet[m.quote] = s.futWallet[m.quote].Add(realized).Sub(fee)
	s.nextTrade++
	o.fills = append(o.fills, trade{id: s.nextTrade, price: price, qty: qty, commission: fee, asset: m.quote,
		realized: realized, time: now})
	o.executed, o.cumQuote, o.status = o.orig, o.cumQuote.Add(notional), "FILLED"
}

// matchFutures fills resting limit orders and triggers the algo orders the price crosses.
func (s *Server) matchFutures(symbol string) {
	p := s.prices[symbol]
	m := futMarket(symbol)
	if m == nil {
		return
	}
	for _, o := range s.orders {
		if o.futures && o.symbol == symbol && o.open() && o.typ == "LIMIT" && marketable(o.side, o.price, p) {
			s.fillFutures(o, o.price)
		}
	}
	for _, a := range s.algos {
		if a.symbol != symbol || a.status != "NEW" || !crossed(a.typ, a.side, a.trigger, p) {
			continue
		}
		qty := a.qty
		if a.closePosition {
			if pos := s.positions[posKey{symbol, a.positionSide}]; pos != nil {
				qty = pos.amt.Abs()
			}
		}
		now := s.now()
		a.status, a.triggerTime, a.updated = "TRIGGERED", now, now
		if !qty.IsPositive() {
			a.status = "EXPIRED"
			continue
		}
		// A triggered stop exits: reduce-only in one-way mode, by its side in hedge mode.
		o := &order{futures: true, id: s.id(), symbol: symbol, side: a.side, positionSide: a.positionSide,
			typ: "MARKET", tif: "GTC", status: "NEW", orig: qty, executed: decimal.Zero, cumQuote: decimal.Zero,
			price: decimal.Zero, stop: a.trigger, reduceOnly: a.positionSide == "BOTH", created: now, updated: now}
		o.cid = "algo_" + strconv.FormatInt(a.algoID, 10)
		if a.typ == "STOP" || a.typ == "TAKE_PROFIT" {
			o.typ, o.price = "LIMIT", a.price
		}
		s.add(o)
		a.actual = o.id
		if o.typ == "MARKET" || marketable(o.side, o.price, p) {
			s.fillFutures(o, p)
		}
		if !o.open() {
			a.status = "FINISHED"
		}
	}
}

func (s *Server) futuresOrderJSON(o *order) map[string]any {
	m := futMarket(o.symbol)
	px := func(v decimal.Decimal) string { return v.StringFixed(int32(m.pricePrec)) }
	avg := decimal.Zero
	if o.executed.IsPositive() {
		avg = o.cumQuote.DivRound(o.executed, 8)
	}
	return map[string]any{
		"orderId": o.id, "symbol": o.symbol, "status": o.status, "clientOrderId": o.cid,
		"price": px(o.price), "avgPrice": avg.StringFixed(5), "origQty": o.orig.StringFixed(int32(m.qtyPrec)),
		"executedQty": o.executed.StringFixed(int32(m.qtyPrec)), "cumQty": o.executed.StringFixed(int32(m.qtyPrec)),
		"cumQuote": o.cumQuote.StringFixed(8), "timeInForce": o.tif, "type": o.typ, "reduceOnly": o.reduceOnly,
		"closePosition": false, "side": o.side, "positionSide": o.positionSide, "stopPrice": px(o.stop),
		"workingType": "CONTRACT_PRICE", "priceProtect": false, "origType": o.typ, "priceMatch": "NONE",
		"selfTradePreventionMode": "EXPIRE_MAKER", "goodTillDate": 0, "time": o.created, "updateTime": o.updated,
	}
}

func (s *Server) futuresGetOrder(c *call) (any, *apiErr) {
	if futMarket(c.params.Get("symbol")) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	o := s.find(true, c.params.Get("symbol"), c.params.Get("orderId"), c.params.Get("origClientOrderId"))
	if o == nil {
		return nil, reject(-2013, "Order does not exist.")
	}
	return s.futuresOrderJSON(o), nil
}

func (s *Server) futuresCancelOrder(c *call) (any, *apiErr) {
	if futMarket(c.params.Get("symbol")) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	o := s.find(true, c.params.Get("symbol"), c.params.Get("orderId"), c.params.Get("origClientOrderId"))
	if o == nil || !o.open() {
		return nil, reject(-2011, "Unknown order sent.")
	}
	o.status, o.updated = "CANCELED", s.now()
	return s.futuresOrderJSON(o), nil
}

func (s *Server) futuresTrades(c *call) (any, *apiErr) {
	sym := c.params.Get("symbol")
	if futMarket(sym) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	out := []map[string]any{}
	for _, o := range s.orders {
		if !o.futures || o.symbol != sym || (c.params.Get("orderId") != "" && strconv.FormatInt(o.id, 10) != c.params.Get("orderId")) {
			continue
		}
		for _, t := range o.fills {
			out = append(out, map[string]any{"buyer": o.side == "BUY", "commission": f8(t.commission),
				"commissionAsset": t.asset, "id": t.id, "maker": false, "orderId": o.id, "price": t.price.String(),
				"qty": t.qty.String(), "quoteQty": t.qty.Mul(t.price).String(), "realizedPnl": f8(t.realized),
				"side": o.side, "positionSide": o.positionSide, "symbol": sym, "time": t.time})
		}
	}
	return out, nil
}

func (s *Server) futuresBalance(*call) (any, *apiErr) {
	out := []map[string]any{}
	for _, asset := range sortedKeys(s.futWallet) {
		w, av := s.futWallet[asset], s.available(asset)
		out = append(out, map[string]any{"accountAlias": "SgsR", "asset": asset, "balance": f8(w),
			"crossWalletBalance": f8(w), "crossUnPnl": "0.00000000", "availableBalance": f8(av),
			"maxWithdrawAmount": f8(av), "marginAvailable": true, "updateTime": s.now()})
	}
	return out, nil
}

func (s *Server) futuresLeverage(c *call) (any, *apiErr) {
	sym := c.params.Get("symbol")
	if futMarket(sym) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	l, err := strconv.Atoi(c.params.Get("leverage"))
	if err != nil || l < 1 || l > 125 {
		return nil, reject(-4028, fmt.Sprintf("Leverage %s is not valid", c.params.Get("leverage")))
	}
	s.leverage[sym] = l
	return map[string]any{"leverage": l, "maxNotionalValue": "1000000", "symbol": sym}, nil
}

// algoOrder is a conditional order of the Algo Order API.
type algoOrder struct {
	algoID                        int64
	cid, symbol, side, typ        string
	positionSide                  string
	tif, workingType              string
	qty, trigger, price           decimal.Decimal
	reduceOnly, closePosition     bool
	status                        string // NEW, TRIGGERED, FINISHED, CANCELED, EXPIRED
	actual                        int64
	created, updated, triggerTime int64
}

var algoTypes = map[string]bool{"STOP_MARKET": true, "TAKE_PROFIT_MARKET": true, "STOP": true, "TAKE_PROFIT": true}

func (s *Server) algoNew(c *call) (any, *apiErr) {
	p := c.params
	if p.Get("algoType") != "CONDITIONAL" {
		return nil, reject(-1130, "Data sent for parameter 'algoType' is not valid.")
	}
	typ, sym, side := p.Get("type"), p.Get("symbol"), p.Get("side")
	if !algoTypes[typ] {
		return nil, reject(-1116, "Invalid orderType.")
	}
	m := futMarket(sym)
	if m == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	if side != "BUY" && side != "SELL" {
		return nil, reject(-1117, "Invalid side.")
	}
	posSide, e := s.positionSide(p)
	if e != nil {
		return nil, e
	}
	cid := p.Get("clientAlgoId")
	if cid == "" {
		cid = "algo_web_" + strconv.FormatInt(s.nextID+1, 10)
	}
	if e := checkClientID("clientAlgoId", cid); e != nil {
		return nil, e
	}
	for _, a := range s.algos {
		if a.cid == cid && a.status == "NEW" {
			return nil, reject(-4116, "ClientOrderId is duplicated.")
		}
	}
	a := &algoOrder{cid: cid, symbol: sym, side: side, positionSide: posSide, typ: typ, tif: "GTC",
		workingType: "CONTRACT_PRICE", qty: decimal.Zero, price: decimal.Zero, status: "NEW"}
	if wt := p.Get("workingType"); wt != "" {
		a.workingType = wt
	}
	trig, ts, e := parseDec(c, "triggerPrice")
	if e != nil {
		return nil, e
	}
	if e := checkPrice(m, trig, ts); e != nil {
		return nil, e
	}
	a.trigger = trig
	if typ == "STOP" || typ == "TAKE_PROFIT" {
		price, ps, e := parseDec(c, "price")
		if e != nil {
			return nil, e
		}
		if e := checkPrice(m, price, ps); e != nil {
			return nil, e
		}
		a.price = price
	}
	a.closePosition = p.Get("closePosition") == "true"
	a.reduceOnly = p.Get("reduceOnly") == "true"
	if a.closePosition {
		// closePosition is documented for STOP_MARKET and TAKE_PROFIT_MARKET only; a limit
		// type with it is the optional-parameter combination Binance refuses.
		if typ == "STOP" || typ == "TAKE_PROFIT" {
			return nil, reject(-1128, "Combination of optional parameters invalid.")
		}
		if p.Has("reduceOnly") {
			return nil, reject(-1106, msgReduceOnlyNotRequired)
		}
		if p.Has("quantity") {
			return nil, reject(-1106, "Parameter 'quantity' sent when not required.")
		}
	} else {
		qty, qs, e := parseDec(c, "quantity")
		if e != nil {
			return nil, e
		}
		if e := checkQty(m, qty, qs); e != nil {
			return nil, e
		}
		a.qty = qty
	}
	if crossed(typ, side, trig, s.prices[sym]) {
		return nil, reject(-2021, "Order would immediately trigger.")
	}
	a.algoID = s.id()
	a.created = s.now()
	a.updated = a.created
	s.algos = append(s.algos, a)
	s.placed[cid]++
	return s.algoJSON(a), nil
}

func (s *Server) algoJSON(a *algoOrder) map[string]any {
	m := futMarket(a.symbol)
	px := func(v decimal.Decimal) string { return v.StringFixed(int32(m.pricePrec)) }
	actual, actualPrice := "", "0.00000"
	if a.actual != 0 {
		actual = strconv.FormatInt(a.actual, 10)
		for _, o := range s.orders {
			if o.id == a.actual && o.executed.IsPositive() {
				actualPrice = o.cumQuote.DivRound(o.executed, 8).StringFixed(5)
			}
		}
	}
	return map[string]any{
		"algoId": a.algoID, "clientAlgoId": a.cid, "algoType": "CONDITIONAL", "orderType": a.typ,
		"symbol": a.symbol, "side": a.side, "positionSide": a.positionSide, "timeInForce": a.tif,
		"quantity": a.qty.StringFixed(int32(m.qtyPrec)), "algoStatus": a.status, "actualOrderId": actual,
		"actualPrice": actualPrice, "triggerPrice": px(a.trigger), "price": px(a.price), "icebergQuantity": nil,
		"tpTriggerPrice": "0.000", "tpPrice": "0.000", "slTriggerPrice": "0.000", "slPrice": "0.000", "tpOrderType": "",
		"selfTradePreventionMode": "EXPIRE_MAKER", "workingType": a.workingType, "priceMatch": "NONE",
		"closePosition": a.closePosition, "priceProtect": false, "reduceOnly": a.reduceOnly,
		"createTime": a.created, "updateTime": a.updated, "triggerTime": a.triggerTime, "goodTillDate": 0,
	}
}

func (s *Server) findAlgo(c *call) *algoOrder {
	id, cid := c.params.Get("algoId"), c.params.Get("clientAlgoId")
	if id == "" && cid == "" {
		id, cid = c.params.Get("algoid"), c.params.Get("clientalgoid")
	}
	for i := len(s.algos) - 1; i >= 0; i-- {
		a := s.algos[i]
		if (id != "" && strconv.FormatInt(a.algoID, 10) == id) || (id == "" && cid != "" && a.cid == cid) {
			return a
		}
	}
	return nil
}

func (s *Server) algoGet(c *call) (any, *apiErr) {
	a := s.findAlgo(c)
	if a == nil {
		return nil, reject(-2013, "Order does not exist.")
	}
	return s.algoJSON(a), nil
}

func (s *Server) algoCancel(c *call) (any, *apiErr) {
	a := s.findAlgo(c)
	if a == nil || a.status != "NEW" {
		return nil, reject(-2011, "Unknown order sent.")
	}
	a.status, a.updated = "CANCELED", s.now()
	return map[string]any{"algoId": a.algoID, "clientAlgoId": a.cid, "code": "200", "msg": "success"}, nil
}

func (s *Server) positionMode(*call) (any, *apiErr) {
	return map[string]any{"dualSidePosition": s.hedge}, nil
}

// changePositionMode is POST /fapi/v1/positionSide/dual: refused when nothing changes
// (-4059), while a position is open (-4068) or while an order is open (-4067).
func (s *Server) changePositionMode(c *call) (any, *apiErr) {
	var hedge bool
	switch c.params.Get("dualSidePosition") {
	case "true":
		hedge = true
	case "false":
	case "":
		return nil, mandatory("dualSidePosition")
	default:
		return nil, reject(-1130, "Data sent for parameter 'dualSidePosition' is not valid.")
	}
	if hedge == s.hedge {
		return nil, reject(-4059, "No need to change position side.")
	}
	for _, p := range s.positions {
		if !p.amt.IsZero() {
			return nil, reject(-4068, "Position side cannot be changed if there exists position.")
		}
	}
	for _, o := range s.orders {
		if o.futures && o.open() {
			return nil, reject(-4067, "Position side cannot be changed if there exists open orders.")
		}
	}
	for _, a := range s.algos {
		if a.status == "NEW" {
			return nil, reject(-4067, "Position side cannot be changed if there exists open orders.")
		}
	}
	s.hedge = hedge
	return map[string]any{"code": 200, "msg": "success"}, nil
}

// positionRisk is GET /fapi/v3/positionRisk: the positions held (v3 lists only symbols with
// a position or an open order; here the non-zero positions), one entry per side.
func (s *Server) positionRisk(c *call) (any, *apiErr) {
	sym := c.params.Get("symbol")
	if sym != "" && futMarket(sym) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	keys := make([]posKey, 0, len(s.positions))
	for k, p := range s.positions {
		if !p.amt.IsZero() && (sym == "" || k.symbol == sym) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].symbol+keys[i].side < keys[j].symbol+keys[j].side
	})
	out := []map[string]any{}
	for _, k := range keys {
		p, m := s.positions[k], futMarket(k.symbol)
		mark := s.prices[k.symbol]
		notional := p.amt.Mul(mark)
		margin := notional.Abs().DivRound(decimal.NewFromInt(int64(s.lev(k.symbol))), 8)
		out = append(out, map[string]any{
			"symbol": k.symbol, "positionSide": k.side, "positionAmt": p.amt.StringFixed(int32(m.qtyPrec)),
			"entryPrice": p.entry.String(), "breakEvenPrice": p.entry.String(), "markPrice": mark.String(),
			"unRealizedProfit": f8(p.amt.Mul(mark.Sub(p.entry))), "liquidationPrice": "0",
			"isolatedMargin": "0", "notional": f8(notional), "marginAsset": m.quote, "isolatedWallet": "0",
			"initialMargin": f8(margin), "maintMargin": "0", "positionInitialMargin": f8(margin),
			"openOrderInitialMargin": "0", "adl": 0, "bidNotional": "0", "askNotional": "0", "updateTime": s.now(),
		})
	}
	return out, nil
}
