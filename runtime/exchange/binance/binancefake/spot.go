package binancefake

import (
	"regexp"
	"sort"
	"strconv"

	"github.com/shopspring/decimal"
)

var clientIDRE = regexp.MustCompile(`^[.A-Z:/a-z0-9_-]{1,36}$`)

// order is a spot or futures order.
type order struct {
	futures                  bool
	id                       int64
	cid                      string
	symbol, side, typ, tif   string
	positionSide             string // futures: BOTH (one-way), LONG or SHORT (hedge)
	status                   string
	orig, executed, cumQuote decimal.Decimal
	price, stop              decimal.Decimal
	reduceOnly               bool
	triggered                bool // a stop-limit order whose stop was crossed
	created, updated         int64
	fills                    []trade
	lockAsset                string
	locked                   decimal.Decimal
}

type trade struct {
	id                     int64
	price, qty, commission decimal.Decimal
	asset                  string
	realized               decimal.Decimal
	time                   int64
}

func (o *order) open() bool { return o.status == "NEW" || o.status == "PARTIALLY_FILLED" }

// find is the latest order of a market with that symbol and orderId or client ID.
func (s *Server) find(futures bool, symbol, orderID, cid string) *order {
	if orderID != "" {
		id, err := strconv.ParseInt(orderID, 10, 64)
		if o := s.byID[id]; err == nil && o != nil && o.futures == futures && o.symbol == symbol {
			return o
		}
		return nil
	}
	list := s.byCID[cidKey(futures, cid)]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].symbol == symbol {
			return list[i]
		}
	}
	return nil
}

func (s *Server) openWithClientID(futures bool, cid string) bool {
	for _, o := range s.byCID[cidKey(futures, cid)] {
		if o.open() {
			return true
		}
	}
	return false
}

func cidKey(futures bool, cid string) string {
	if futures {
		return "f|" + cid
	}
	return "s|" + cid
}

// add records a new order.
func (s *Server) add(o *order) {
	s.orders = append(s.orders, o)
	s.byID[o.id] = o
	k := cidKey(o.futures, o.cid)
	s.byCID[k] = append(s.byCID[k], o)
}

func mandatory(name string) *apiErr {
	return reject(-1102, "Mandatory parameter '"+name+"' was not sent, was empty/null, or malformed.")
}

func parseDec(c *call, name string) (decimal.Decimal, string, *apiErr) {
	v := c.params.Get(name)
	if v == "" {
		return decimal.Zero, "", mandatory(name)
	}
	x, err := decimal.NewFromString(v)
	if err != nil {
		return decimal.Zero, v, reject(-1100, "Illegal characters found in parameter '"+name+"'; legal range is '^([0-9]{1,20})(\\.[0-9]{1,20})?$'.")
	}
	return x, v, nil
}

var spotTypes = map[string]bool{"MARKET": true, "LIMIT": true, "STOP_LOSS": true, "STOP_LOSS_LIMIT": true,
	"TAKE_PROFIT": true, "TAKE_PROFIT_LIMIT": true}

func (s *Server) spotNewOrder(c *call) (any, *apiErr) {
	p := c.params
	sym := p.Get("symbol")
	m := spotMarket(sym)
	if m == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	side, typ := p.Get("side"), p.Get("type")
	if side != "BUY" && side != "SELL" {
		return nil, reject(-1117, "Invalid side.")
	}
	if !spotTypes[typ] {
		return nil, reject(-1116, "Invalid orderType.")
	}
	if m.status != "TRADING" {
		return nil, reject(-2010, "Market is closed.")
	}
	cid := p.Get("newClientOrderId")
	if cid == "" {
		cid = "web_" + strconv.FormatInt(s.nextID+1, 10)
	}
	if !clientIDRE.MatchString(cid) {
		return nil, illegalClientID("newClientOrderId")
	}
	qty, qs, e := parseDec(c, "quantity")
	if e != nil {
		return nil, e
	}
	if decimals(qs) > 8 {
		return nil, reject(-1111, "Parameter 'quantity' has too much precision.")
	}
	if !qty.IsPositive() || qty.LessThan(m.minQty) || !multiple(qty, m.step) {
		return nil, reject(-1013, "Filter failure: LOT_SIZE")
	}
	o := &order{id: 0, cid: cid, symbol: sym, side: side, typ: typ, tif: "GTC", status: "NEW", orig: qty,
		executed: decimal.Zero, cumQuote: decimal.Zero, price: decimal.Zero, stop: decimal.Zero}
	limit := typ == "LIMIT" || typ == "STOP_LOSS_LIMIT" || typ == "TAKE_PROFIT_LIMIT"
	stop := typ != "MARKET" && typ != "LIMIT"
	// Each type takes its own parameters; a price or timeInForce on a market type, or a
	// stopPrice on a type without a trigger, is a parameter sent when not required.
	for _, extra := range []struct {
		name    string
		allowed bool
	}{{"price", limit}, {"timeInForce", limit}, {"stopPrice", stop}} {
		if !extra.allowed && p.Has(extra.name) {
			return nil, reject(-1106, "Parameter '"+extra.name+"' sent when not required.")
		}
	}
	for _, pp := range []struct {
		name string
		need bool
		dst  *decimal.Decimal
	}{{"price", limit, &o.price}, {"stopPrice", stop, &o.stop}} {
		if !pp.need {
			continue
		}
		v, vs, e := parseDec(c, pp.name)
		if e != nil {
			return nil, e
		}
		if decimals(vs) > 8 {
			return nil, reject(-1111, "Parameter '"+pp.name+"' has too much precision.")
		}
		if v.LessThan(m.minPrice) || !multiple(v, m.tick) {
			return nil, reject(-1013, "Filter failure: PRICE_FILTER")
		}
		*pp.dst = v
	}
	if limit {
		if o.tif = p.Get("timeInForce"); o.tif == "" {
			return nil, mandatory("timeInForce")
		}
	}
	market := s.prices[sym]
	ref := market
	switch {
	case limit:
		ref = o.price
	case stop:
		ref = o.stop
	}
	if qty.Mul(ref).LessThan(m.minNotional) {
		return nil, reject(-1013, "Filter failure: NOTIONAL")
	}
	if stop && crossed(typ, side, o.stop, market) {
		return nil, reject(-2010, "Stop price would trigger immediately.")
	}
	if s.openWithClientID(false, cid) {
		return nil, reject(-2010, "Duplicate order sent.")
	}
	base, quote := s.spot(m.base), s.spot(m.quote)
	if side == "BUY" && quote.free.LessThan(qty.Mul(ref)) || side == "SELL" && base.free.LessThan(qty) {
		return nil, reject(-2010, "Account has insufficient balance for requested action.")
	}
	o.id = s.id()
	o.created = s.now()
	o.updated = o.created
	s.add(o)
	s.placed[cid]++
	switch {
	case typ == "MARKET":
		s.fillSpot(o, market)
	case typ == "LIMIT" && marketable(side, o.price, market):
		s.fillSpot(o, market)
	case side == "BUY":
		s.lock(o, m.quote, qty.Mul(ref))
	default:
		s.lock(o, m.base, qty)
	}
	resp := p.Get("newOrderRespType")
	if resp == "" {
		resp = "ACK"
		if typ == "MARKET" || typ == "LIMIT" {
			resp = "FULL"
		}
	}
	return s.spotPlaced(o, resp), nil
}

// crossed reports whether a stop (STOP_LOSS…) or take-profit (TAKE_PROFIT…) order with
// that stop price triggers at the price.
func crossed(typ, side string, stop, price decimal.Decimal) bool {
	isStop := typ == "STOP_LOSS" || typ == "STOP_LOSS_LIMIT" || typ == "STOP" || typ == "STOP_MARKET"
	if isStop == (side == "SELL") {
		return price.LessThanOrEqual(stop)
	}
	return price.GreaterThanOrEqual(stop)
}

// marketable: a buy at or above the price, a sell at or below.
func marketable(side string, limit, price decimal.Decimal) bool {
	if side == "BUY" {
		return limit.GreaterThanOrEqual(price)
	}
	return limit.LessThanOrEqual(price)
}

func (s *Server) lock(o *order, asset string, amount decimal.Decimal) {
	b := s.spot(asset)
	b.free, b.locked = b.free.Sub(amount), b.locked.Add(amount)
	o.lockAsset, o.locked = asset, amount
}

func (s *Server) unlock(o *order) {
	if o.lockAsset == "" {
		return
	}
	b := s.spot(o.lockAsset)
	b.free, b.locked = b.free.Add(o.locked), b.locked.Sub(o.locked)
	o.lockAsset, o.locked = "", decimal.Zero
}

// fillSpot fills the rest of o at price: a buy pays quote and receives base minus the fee
// (in base); a sell pays base and receives quote minus the fee (in quote). Without the
// funds (a triggered order) it expires.
func (s *Server) fillSpot(o *order, price decimal.Decimal) {
	m := spotMarket(o.symbol)
	s.unlock(o)
	qty := o.orig.Sub(o.executed)
	notional := qty.Mul(price)
	base, quote := s.spot(m.base), s.spot(m.quote)
	now := s.now()
	o.updated = now
	var fee decimal.Decimal
	var asset string
	if o.side == "BUY" {
		if quote.free.LessThan(notional) {
			o.status = "EXPIRED"
			return
		}
		fee, asset = qty.Mul(s.spotFee).Truncate(8), m.base
		quote.free = quote.free.Sub(notional)
		base.free = base.free.Add(qty.Sub(fee))
	} else {
		if base.free.LessThan(qty) {
			o.status = "EXPIRED"
			return
		}
		fee, asset = notional.Mul(s.spotFee).Truncate(8), m.quote
		base.free = base.free.Sub(qty)
		quote.free = quote.free.Add(notional.Sub(fee))
	}
	s.nextTrade++
	o.fills = append(o.fills, trade{id: s.nextTrade, price: price, qty: qty, commission: fee, asset: asset, time: now})
	o.executed, o.cumQuote, o.status = o.orig, o.cumQuote.Add(notional), "FILLED"
}

// matchSpot fills the resting orders and triggers the stops the symbol's price crosses.
func (s *Server) matchSpot(symbol string) {
	p := s.prices[symbol]
	for _, o := range s.orders {
		if o.futures || o.symbol != symbol || !o.open() {
			continue
		}
		switch {
		case o.typ == "LIMIT" || o.triggered:
			if marketable(o.side, o.price, p) {
				s.fillSpot(o, o.price)
			}
		case crossed(o.typ, o.side, o.stop, p):
			if o.typ == "STOP_LOSS" || o.typ == "TAKE_PROFIT" {
				s.fillSpot(o, p)
			} else {
				o.triggered = true
				if marketable(o.side, o.price, p) {
					s.fillSpot(o, o.price)
				}
			}
		}
	}
}

func (s *Server) spotOrderJSON(o *order) map[string]any {
	return map[string]any{
		"symbol": o.symbol, "orderId": o.id, "orderListId": -1, "clientOrderId": o.cid,
		"price": f8(o.price), "origQty": f8(o.orig), "executedQty": f8(o.executed),
		"cummulativeQuoteQty": f8(o.cumQuote), "status": o.status, "timeInForce": o.tif, "type": o.typ,
		"side": o.side, "stopPrice": f8(o.stop), "icebergQty": f8(decimal.Zero), "time": o.created,
		"updateTime": o.updated, "isWorking": !(o.typ != "MARKET" && o.typ != "LIMIT" && !o.triggered),
		"workingTime": o.created, "origQuoteOrderQty": f8(decimal.Zero), "selfTradePreventionMode": "EXPIRE_MAKER",
	}
}

func (s *Server) spotPlaced(o *order, resp string) map[string]any {
	if resp == "ACK" {
		return map[string]any{"symbol": o.symbol, "orderId": o.id, "orderListId": -1,
			"clientOrderId": o.cid, "transactTime": o.created}
	}
	out := s.spotOrderJSON(o)
	out["transactTime"] = o.created
	for _, k := range []string{"time", "updateTime", "isWorking", "icebergQty"} {
		delete(out, k)
	}
	if resp == "FULL" {
		fills := []map[string]any{}
		for _, t := range o.fills {
			fills = append(fills, map[string]any{"price": f8(t.price), "qty": f8(t.qty),
				"commission": f8(t.commission), "commissionAsset": t.asset, "tradeId": t.id})
		}
		out["fills"] = fills
	}
	return out
}

func (s *Server) spotGetOrder(c *call) (any, *apiErr) {
	if spotMarket(c.params.Get("symbol")) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	o := s.find(false, c.params.Get("symbol"), c.params.Get("orderId"), c.params.Get("origClientOrderId"))
	if o == nil {
		return nil, reject(-2013, "Order does not exist.")
	}
	return s.spotOrderJSON(o), nil
}

func (s *Server) spotCancelOrder(c *call) (any, *apiErr) {
	if spotMarket(c.params.Get("symbol")) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	o := s.find(false, c.params.Get("symbol"), c.params.Get("orderId"), c.params.Get("origClientOrderId"))
	if o == nil || !o.open() {
		return nil, reject(-2011, "Unknown order sent.")
	}
	s.unlock(o)
	o.status, o.updated = "CANCELED", s.now()
	out := s.spotOrderJSON(o)
	out["origClientOrderId"] = o.cid
	out["clientOrderId"] = "cancel_" + strconv.FormatInt(o.id, 10)
	out["transactTime"] = o.updated
	return out, nil
}

func (s *Server) spotTrades(c *call) (any, *apiErr) {
	sym := c.params.Get("symbol")
	if spotMarket(sym) == nil {
		return nil, reject(-1121, "Invalid symbol.")
	}
	out := []map[string]any{}
	for _, o := range s.orders {
		if o.futures || o.symbol != sym || (c.params.Get("orderId") != "" && strconv.FormatInt(o.id, 10) != c.params.Get("orderId")) {
			continue
		}
		for _, t := range o.fills {
			out = append(out, map[string]any{"symbol": sym, "id": t.id, "orderId": o.id, "orderListId": -1,
				"price": f8(t.price), "qty": f8(t.qty), "quoteQty": f8(t.qty.Mul(t.price)),
				"commission": f8(t.commission), "commissionAsset": t.asset, "time": t.time,
				"isBuyer": o.side == "BUY", "isMaker": false, "isBestMatch": true})
		}
	}
	return out, nil
}

func (s *Server) spotAccount(c *call) (any, *apiErr) {
	omit := c.params.Get("omitZeroBalances") == "true"
	bals := []map[string]any{}
	for _, asset := range sortedKeys(s.spotBal) {
		b := s.spotBal[asset]
		if omit && b.free.IsZero() && b.locked.IsZero() {
			continue
		}
		bals = append(bals, map[string]any{"asset": asset, "free": f8(b.free), "locked": f8(b.locked)})
	}
	r := s.restrictions
	return map[string]any{
		"makerCommission": 10, "takerCommission": 10, "buyerCommission": 0, "sellerCommission": 0,
		"commissionRates": map[string]any{"maker": "0.00100000", "taker": "0.00100000", "buyer": "0.00000000", "seller": "0.00000000"},
		"canTrade":        r.EnableSpotAndMarginTrading, "canWithdraw": true, "canDeposit": true, "brokered": false,
		"requireSelfTradePrevention": false, "preventSor": false, "updateTime": s.now(), "accountType": "SPOT",
		"balances": bals, "permissions": []string{"SPOT"}, "uid": 354937868,
	}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
