package bybitfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// coin is a wallet coin of the unified account.
type coin struct {
	balance decimal.Decimal
	locked  decimal.Decimal // spot limit orders
}

// position is a linear position: the one position of a symbol in one-way mode
// (positionIdx 0), or one side of it in hedge mode (1 long, 2 short).
type position struct {
	size    decimal.Decimal // signed: long > 0
	entry   decimal.Decimal
	margin  decimal.Decimal // initial margin held
	created int64
	updated int64
}

// order is an order of any category.
type order struct {
	id, link, category, symbol, side, orderType string
	status, rejectReason                        string
	qtyText, priceText, triggerText             string
	qty, price, trigger                         decimal.Decimal
	triggerDirection                            int
	orderFilter, stopOrderType, marketUnit      string
	reduceOnly, closeOnTrigger                  bool
	positionIdx                                 int
	// basePrice is the last price when a spot order was placed, lastPriceOnCreated
	// the same for linear: Bybit answers each in its own category only.
	basePrice, lastPriceOnCreated      decimal.Decimal
	avgPrice, cumQty, cumValue, cumFee decimal.Decimal
	feeCoin                            string // the coin cumFee is charged in
	lockedQuote, lockedBase, orderIM   decimal.Decimal
	created, updated                   int64
}

func (o *order) finished() bool {
	switch o.status {
	case "Filled", "Cancelled", "Rejected", "Deactivated", "PartiallyFilledCanceled":
		return true
	}
	return false
}

func (o *order) json() map[string]any {
	avg := ""
	if o.cumQty.IsPositive() {
		avg = o.avgPrice.String()
	}
	price := o.priceText
	if price == "" {
		price = "0"
	}
	trigger := o.triggerText
	if trigger == "" {
		trigger = "0"
	}
	stop := o.stopOrderType
	if stop == "" {
		stop = "UNKNOWN"
	}
	// cumFeeDetail is the fee per coin (spot and linear; cumExecFee is deprecated there).
	detail := map[string]string{}
	if !o.cumFee.IsZero() {
		detail[o.feeCoin] = o.cumFee.String()
	}
	out := map[string]any{
		"orderId": o.id, "orderLinkId": o.link, "blockTradeId": "", "symbol": o.symbol, "price": price,
		"qty": o.qtyText, "side": o.side, "isLeverage": "0", "positionIdx": o.positionIdx, "orderStatus": o.status,
		"cancelType": "UNKNOWN", "rejectReason": o.rejectReason, "avgPrice": avg,
		"leavesQty": o.qty.Sub(o.cumQty).String(), "leavesValue": "0", "cumExecQty": o.cumQty.String(),
		"cumExecValue": o.cumValue.String(), "cumExecFee": o.cumFee.String(), "timeInForce": tif(o.orderType),
		"orderType": o.orderType, "stopOrderType": stop, "orderIv": "", "marketUnit": o.marketUnit,
		"triggerPrice": trigger, "takeProfit": "", "stopLoss": "", "tpTriggerBy": "", "slTriggerBy": "",
		"triggerDirection": o.triggerDirection, "triggerBy": "LastPrice",
		"lastPriceOnCreated": "", "reduceOnly": o.reduceOnly,
		"closeOnTrigger": o.closeOnTrigger, "smpType": "None", "smpGroup": 0, "smpOrderId": "",
		"tpslMode": "", "tpLimitPrice": "", "slLimitPrice": "", "placeType": "",
		"createdTime": strconv.FormatInt(o.created, 10), "updatedTime": strconv.FormatInt(o.updated, 10),
		"cumFeeDetail": detail,
	}
	// Bybit's order list gives lastPriceOnCreated for linear and basePrice for spot, each in
	// its own category only; spot takes no triggerDirection either (create-order: linear
	// and inverse), so a spot order shows 0.
	if o.category == "spot" {
		out["basePrice"] = o.basePrice.String()
		delete(out, "createType")
	} else {
		out["lastPriceOnCreated"] = o.lastPriceOnCreated.String()
		out["createType"] = "CreateByUser"
	}
	return out
}

func tif(orderType string) string {
	if orderType == "Market" {
		return "IOC"
	}
	return "GTC"
}

// Order is an order as the fake holds it, for tests.
type Order struct {
	OrderID, OrderLinkID, Category, Symbol, Side, OrderType, Status string
	Qty, Price, TriggerPrice, AvgPrice, CumExecQty, CumExecFee      decimal.Decimal
	MarketUnit, OrderFilter                                         string
	TriggerDirection, PositionIdx                                   int
	ReduceOnly, CloseOnTrigger                                      bool
	// FeeCoin is the coin CumExecFee is charged in (cumFeeDetail's key).
	FeeCoin string
	// CreatedAt is when the fake created the order (its createdTime).
	CreatedAt time.Time
}

// Order finds an order by orderLinkId.
func (s *Server) Order(orderLinkID string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.byLink[orderLinkID]
	if o == nil {
		return Order{}, false
	}
	return Order{OrderID: o.id, OrderLinkID: o.link, Category: o.category, Symbol: o.symbol, Side: o.side,
		OrderType: o.orderType, Status: o.status, Qty: o.qty, Price: o.price, TriggerPrice: o.trigger,
		AvgPrice: o.avgPrice, CumExecQty: o.cumQty, CumExecFee: o.cumFee, MarketUnit: o.marketUnit,
		OrderFilter: o.orderFilter, TriggerDirection: o.triggerDirection, ReduceOnly: o.reduceOnly,
		CloseOnTrigger: o.closeOnTrigger, PositionIdx: o.positionIdx, FeeCoin: o.feeCoin,
		CreatedAt: time.UnixMilli(o.created)}, true
}

// Position is a linear symbol's one-way position (positionIdx 0): signed size (long > 0),
// entry price, margin.
func (s *Server) Position(symbol string) (size, entry, margin decimal.Decimal) {
	return s.PositionAt(symbol, 0)
}

// PositionAt is one position of a symbol by positionIdx: 0 one-way, 1 the hedge-mode long
// (size > 0), 2 the hedge-mode short (size < 0).
func (s *Server) PositionAt(symbol string, idx int) (size, entry, margin decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.positions[posKey{symbol, idx}]; p != nil {
		return p.size, p.entry, p.margin
	}
	return decimal.Zero, decimal.Zero, decimal.Zero
}

// Leverage is a linear symbol's leverage (10 until set).
func (s *Server) Leverage(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lev(symbol)
}

func (s *Server) lev(symbol string) int {
	if l, ok := s.leverage[symbol]; ok {
		return l
	}
	return 10
}

// SetPrice sets a symbol's last price (spot and linear alike) and fills what it crosses:
// resting limit orders at their price, triggered conditional orders at the new price.
func (s *Server) SetPrice(symbol string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prices[symbol] = price
	for _, o := range s.orders {
		if o.symbol != symbol || o.finished() {
			continue
		}
		switch {
		case o.status == "Untriggered":
			if (o.triggerDirection == 1 && price.GreaterThanOrEqual(o.trigger)) ||
				(o.triggerDirection == 2 && price.LessThanOrEqual(o.trigger)) ||
				(o.triggerDirection == 0 && o.triggerRises() && price.GreaterThanOrEqual(o.trigger)) ||
				(o.triggerDirection == 0 && !o.triggerRises() && price.LessThanOrEqual(o.trigger)) {
				o.status = "Triggered"
				if f := s.execute(o); f != nil {
					o.status, o.rejectReason = "Cancelled", fmt.Sprintf("EC_%d", f.code)
				}
				o.updated = s.now().UnixMilli()
			}
		case o.status == "New" && o.orderType == "Limit":
			if (o.side == "Buy" && price.LessThanOrEqual(o.price)) || (o.side == "Sell" && price.GreaterThanOrEqual(o.price)) {
				s.release(o)
				if f := s.fill(o, o.price); f != nil {
					o.status, o.rejectReason = "Cancelled", fmt.Sprintf("EC_%d", f.code)
				}
				o.updated = s.now().UnixMilli()
			}
		}
	}
}

// triggerRises: a spot conditional triggers on a rise when its trigger was above the price
// when it was placed (Bybit's basePrice).
func (o *order) triggerRises() bool { return o.trigger.GreaterThan(o.basePrice) }

func (s *Server) coin(name string) *coin {
	c := s.wallet[name]
	if c == nil {
		c = &coin{}
		s.wallet[name] = c
	}
	return c
}

func (s *Server) price(symbol string) decimal.Decimal { return s.prices[symbol] }

// createRequest is the body of /v5/order/create. Pointers tell a field left out from one
// sent with its zero value, where Bybit tells them apart.
type createRequest struct {
	Category         string `json:"category"`
	Symbol           string `json:"symbol"`
	Side             string `json:"side"`
	OrderType        string `json:"orderType"`
	Qty              string `json:"qty"`
	MarketUnit       string `json:"marketUnit"`
	Price            string `json:"price"`
	TimeInForce      string `json:"timeInForce"`
	TriggerPrice     string `json:"triggerPrice"`
	TriggerDirection int    `json:"triggerDirection"`
	TriggerBy        string `json:"triggerBy"`
	OrderFilter      string `json:"orderFilter"`
	PositionIdx      *int   `json:"positionIdx"`
	OrderLinkID      string `json:"orderLinkId"`
	ReduceOnly       *bool  `json:"reduceOnly"`
	CloseOnTrigger   *bool  `json:"closeOnTrigger"`
}

// validLink is create-order's orderLinkId rule: at most 36 characters of letters (either
// case), digits, "-" and "_".
func validLink(s string) bool {
	if len(s) > 36 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func multiple(v, step decimal.Decimal) bool { return step.IsPositive() && v.Mod(step).IsZero() }

func dec(s string) (decimal.Decimal, bool) {
	d, err := decimal.NewFromString(s)
	return d, err == nil
}

// refuseCreate applies the parameter rules R1-R9 of RULES.md to an order/create body,
// before anything about the account is looked at: what Bybit documents as invalid is
// refused with Bybit's retCode and message, so a test sees the adapter send it.
func (s *Server) refuseCreate(r createRequest) *failure {
	// R1: category is required and is spot or linear (the categories sigops trades).
	if r.Category == "" {
		return fail(10001, "params error: category is required")
	}
	spot := r.Category == "spot"
	if !spot && r.Category != "linear" {
		return fail(10001, "params error: category invalid")
	}
	// R2: the other required fields. Spot answers its own "empty parameter" code.
	for _, f := range []struct{ name, value string }{{"symbol", r.Symbol}, {"side", r.Side}, {"orderType", r.OrderType}, {"qty", r.Qty}} {
		if f.value == "" {
			if spot {
				return fail(170105, "Parameter '%s' was empty.", f.name)
			}
			return fail(10001, "params error: %s is required", f.name)
		}
	}
	// R3: enumerations.
	switch {
	case r.Side != "Buy" && r.Side != "Sell":
		if spot {
			return fail(170117, "Invalid side.")
		}
		return fail(10001, "params error: side invalid")
	case r.OrderType != "Market" && r.OrderType != "Limit":
		if spot {
			return fail(170116, "Invalid orderType.")
		}
		return fail(10001, "params error: orderType invalid")
	case r.TimeInForce != "" && r.TimeInForce != "GTC" && r.TimeInForce != "IOC" && r.TimeInForce != "FOK" && r.TimeInForce != "PostOnly":
		if spot {
			return fail(170115, "Invalid timeInForce.")
		}
		return fail(10001, "params error: timeInForce invalid")
	case !spot && r.TriggerBy != "" && r.TriggerBy != "LastPrice" && r.TriggerBy != "IndexPrice" && r.TriggerBy != "MarkPrice":
		return fail(10001, "params error: triggerBy invalid")
	}
	// R4: orderLinkId. Bybit takes it as optional; sigops always sends one, so the fake
	// refuses an order without it too (RULES.md says where the fake is stricter).
	if r.OrderLinkID == "" || !validLink(r.OrderLinkID) {
		return fail(10001, "params error: orderLinkId invalid")
	}
	if spot {
		// R5: create-order takes reduceOnly for linear, inverse and option only.
		if r.ReduceOnly != nil && *r.ReduceOnly {
			return fail(10001, "params error: reduceOnly is not supported for spot")
		}
		// R6: orderFilter is Order, tpslOrder or StopOrder.
		if r.OrderFilter != "" && r.OrderFilter != "Order" && r.OrderFilter != "StopOrder" && r.OrderFilter != "tpslOrder" {
			return fail(170201, "Invalid orderFilter parameter")
		}
		// R7: a spot conditional or TP/SL order needs its trigger price.
		if (r.OrderFilter == "StopOrder" || r.OrderFilter == "tpslOrder") && r.TriggerPrice == "" {
			return fail(170202, "Please enter the TP/SL price.")
		}
		return nil
	}
	// R8: positionIdx must match the symbol's position mode (required in hedge mode: left
	// out, it is 0).
	idx := 0
	if r.PositionIdx != nil {
		idx = *r.PositionIdx
	}
	if hedge := s.modeOf(r.Symbol) == BothSides; (!hedge && idx != 0) || (hedge && idx != 1 && idx != 2) {
		return fail(10001, "position idx not match position mode")
	}
	// R9: a linear conditional order names the direction it triggers in.
	if r.TriggerPrice != "" && r.TriggerDirection != 1 && r.TriggerDirection != 2 {
		return fail(10001, "params error: TriggerDirection invalid")
	}
	return nil
}

func (s *Server) createOrder(_ map[string]string, body []byte) (any, *failure) {
	var r createRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fail(10001, "params error: %v", err)
	}
	if f := s.refuseCreate(r); f != nil {
		return nil, f
	}
	spot := r.Category == "spot"
	in := findInstrument(r.Category, r.Symbol)
	if in == nil || in.status != "Trading" {
		if spot {
			return nil, fail(170121, "Invalid symbol.")
		}
		return nil, fail(10001, "params error: symbol invalid")
	}
	if s.byLink[r.OrderLinkID] != nil {
		if spot {
			return nil, fail(170141, "Duplicate clientOrderId")
		}
		return nil, fail(110072, "OrderLinkedID is duplicate")
	}
	qty, ok := dec(r.Qty)
	if !ok || !qty.IsPositive() {
		if spot {
			return nil, fail(170130, "Data sent for paramter 'qty' is not valid.")
		}
		return nil, fail(10001, "params error: qty invalid")
	}
	tick := decimal.RequireFromString(in.tick)
	last := s.price(in.symbol)
	now := s.now().UnixMilli()
	o := &order{link: r.OrderLinkID, category: r.Category, symbol: r.Symbol, side: r.Side, orderType: r.OrderType,
		qtyText: r.Qty, qty: qty, rejectReason: "EC_NoError", created: now, updated: now}
	if spot {
		o.basePrice = last
	} else {
		o.lastPriceOnCreated = last
		o.reduceOnly = r.ReduceOnly != nil && *r.ReduceOnly
		o.closeOnTrigger = r.CloseOnTrigger != nil && *r.CloseOnTrigger
		if r.PositionIdx != nil {
			o.positionIdx = *r.PositionIdx
		}
	}
	if r.OrderType == "Limit" {
		p, ok := dec(r.Price)
		switch {
		case !ok || !p.IsPositive():
			return nil, fail(10001, "params error: price invalid")
		case !multiple(p, tick) && spot: // R11
			return nil, fail(170134, "Order price decimal too long.")
		case !multiple(p, tick):
			return nil, fail(10001, "params error: price invalid, not a multiple of tickSize %s", in.tick)
		}
		o.price, o.priceText = p, r.Price
	}
	if spot {
		o.orderFilter = r.OrderFilter
		if f := s.checkSpot(in, o, r); f != nil {
			return nil, f
		}
	} else if f := s.checkLinear(in, o); f != nil {
		return nil, f
	}
	if r.TriggerPrice != "" {
		t, ok := dec(r.TriggerPrice)
		if !ok || !t.IsPositive() || !multiple(t, tick) { // R11
			if spot {
				return nil, fail(170134, "Order price decimal too long.")
			}
			return nil, fail(10001, "params error: triggerPrice invalid")
		}
		o.trigger, o.triggerText = t, r.TriggerPrice
	}
	switch {
	case spot && (o.orderFilter == "StopOrder" || o.orderFilter == "tpslOrder"):
		o.status, o.stopOrderType = "Untriggered", "Stop"
		if o.orderFilter == "tpslOrder" {
			o.stopOrderType = "tpslOrder"
		}
	case !spot && o.trigger.IsPositive():
		switch r.TriggerDirection {
		case 1:
			if o.trigger.LessThanOrEqual(last) {
				return nil, fail(110092, "expect Rising, but trigger_price[%s] <= current[%s]??LastPrice", o.trigger, last)
			}
		case 2:
			if o.trigger.GreaterThanOrEqual(last) {
				return nil, fail(110093, "expect Falling, but trigger_price[%s] >= current[%s]??LastPrice", o.trigger, last)
			}
		}
		o.triggerDirection, o.status, o.stopOrderType = r.TriggerDirection, "Untriggered", "Stop"
	default:
		if f := s.execute(o); f != nil {
			return nil, f
		}
	}
	s.seq++
	o.id = fmt.Sprintf("%08x-0000-4000-8000-%012x", s.seq, s.seq)
	s.orders = append(s.orders, o)
	s.byID[o.id], s.byLink[o.link] = o, o
	s.created[o.link]++
	return map[string]string{"orderId": o.id, "orderLinkId": o.link}, nil
}

// checkSpot applies the spot lot filters. A Market Buy's qty is quote unless
// marketUnit=baseCoin; it is converted to base here.
func (s *Server) checkSpot(in *instrument, o *order, r createRequest) *failure {
	precision := decimal.RequireFromString(in.basePrecision)
	last := s.price(in.symbol)
	o.marketUnit = r.MarketUnit
	if r.OrderType == "Market" && r.Side == "Buy" && r.MarketUnit != "baseCoin" {
		// qty is the quote amount to spend.
		if o.marketUnit == "" {
			o.marketUnit = "quoteCoin"
		}
		if !last.IsPositive() {
			return fail(170001, "Internal error.")
		}
		o.qty = o.qty.Div(last).Div(precision).Floor().Mul(precision)
		o.qtyText = o.qty.String()
	} else if r.OrderType == "Market" && o.marketUnit == "" {
		o.marketUnit = "baseCoin"
	}
	switch {
	case !multiple(o.qty, precision): // R10
		return fail(170137, "Order volume decimal too long")
	case o.qty.LessThan(decimal.RequireFromString(in.minQty)):
		return fail(170136, "Order quantity lower than the minimum.")
	case o.qty.GreaterThan(decimal.RequireFromString(in.maxQty)):
		return fail(170135, "Order quantity too large.")
	}
	ref := o.price
	if !ref.IsPositive() {
		ref = last
	}
	if o.qty.Mul(ref).LessThan(decimal.RequireFromString(in.minAmt)) {
		return fail(170140, "Transaction amount lower than the minimum.")
	}
	return nil
}

// checkLinear applies the linear lot filters.
func (s *Server) checkLinear(in *instrument, o *order) *failure {
	step := decimal.RequireFromString(in.qtyStep)
	switch {
	case !multiple(o.qty, step): // R10
		return fail(10001, "params error: Qty invalid, not a multiple of qtyStep %s", in.qtyStep)
	case o.qty.LessThan(decimal.RequireFromString(in.minQty)):
		return fail(10001, "The number of contracts exceeds minimum limit allowed")
	case o.qty.GreaterThan(decimal.RequireFromString(in.maxQty)):
		return fail(10001, "The number of contracts exceeds maximum limit allowed")
	}
	ref := o.price
	if !ref.IsPositive() {
		ref = s.price(in.symbol)
	}
	if !o.closes() && o.qty.Mul(ref).LessThan(decimal.RequireFromString(in.minNotional)) {
		return fail(110094, "Order does not meet minimum order value %s%s", in.minNotional, in.settle)
	}
	return nil
}

// closes reports a linear order that can only take from a position: reduce-only, or in
// hedge mode an order against its side's direction (a Sell on the long, positionIdx 1, or
// a Buy on the short, 2), which Bybit treats as closing that side.
func (o *order) closes() bool {
	return o.reduceOnly || (o.positionIdx == 1 && o.side == "Sell") || (o.positionIdx == 2 && o.side == "Buy")
}

// execute runs a market or limit order now: a market order (or a triggered conditional, or
// a marketable limit) fills at the last price; a limit order that is not marketable rests.
func (s *Server) execute(o *order) *failure {
	last := s.price(o.symbol)
	if !last.IsPositive() {
		return fail(170001, "Internal error.")
	}
	if o.orderType == "Limit" && !((o.side == "Buy" && last.LessThanOrEqual(o.price)) || (o.side == "Sell" && last.GreaterThanOrEqual(o.price))) {
		if f := s.reserve(o); f != nil {
			return f
		}
		o.status = "New"
		return nil
	}
	return s.fill(o, last)
}

// reserve holds what a resting limit order needs: the quote of a spot buy, the base of a
// spot sell, the margin of a linear order.
func (s *Server) reserve(o *order) *failure {
	if o.category == "spot" {
		if o.side == "Buy" {
			need := o.qty.Mul(o.price)
			c := s.coin(quoteOf(o))
			if need.GreaterThan(c.balance.Sub(c.locked)) {
				return fail(170131, "Insufficient balance.")
			}
			c.locked = c.locked.Add(need)
			o.lockedQuote = need
			return nil
		}
		c := s.coin(baseOf(o))
		if o.qty.GreaterThan(c.balance.Sub(c.locked)) {
			return fail(170131, "Insufficient balance.")
		}
		c.locked = c.locked.Add(o.qty)
		o.lockedBase = o.qty
		return nil
	}
	if o.closes() {
		return nil
	}
	im := o.qty.Mul(o.price).Div(decimal.NewFromInt(int64(s.lev(o.symbol))))
	if im.GreaterThan(s.available(settleOf(o))) {
		return fail(110007, "ab not enough for new order")
	}
	o.orderIM = im
	return nil
}

// release gives back what reserve held.
func (s *Server) release(o *order) {
	if o.lockedQuote.IsPositive() {
		c := s.coin(quoteOf(o))
		c.locked = c.locked.Sub(o.lockedQuote)
		o.lockedQuote = decimal.Zero
	}
	if o.lockedBase.IsPositive() {
		c := s.coin(baseOf(o))
		c.locked = c.locked.Sub(o.lockedBase)
		o.lockedBase = decimal.Zero
	}
	o.orderIM = decimal.Zero
}

func baseOf(o *order) string   { return findInstrument(o.category, o.symbol).base }
func quoteOf(o *order) string  { return findInstrument(o.category, o.symbol).quote }
func settleOf(o *order) string { return findInstrument(o.category, o.symbol).settle }

// available is a coin's balance that neither spot locks nor linear margin hold, less any
// unrealised loss.
func (s *Server) available(name string) decimal.Decimal {
	c := s.coin(name)
	pim, oim, upl := s.margins(name)
	a := c.balance.Sub(c.locked).Sub(pim).Sub(oim)
	if upl.IsNegative() {
		a = a.Add(upl)
	}
	return a
}

// margins are a settle coin's position margin, order margin and unrealised PnL.
func (s *Server) margins(name string) (pim, oim, upl decimal.Decimal) {
	for k, p := range s.positions {
		if in := findInstrument("linear", k.symbol); in != nil && in.settle == name {
			pim = pim.Add(p.margin)
			upl = upl.Add(s.price(k.symbol).Sub(p.entry).Mul(p.size))
		}
	}
	for _, o := range s.orders {
		if o.category == "linear" && !o.finished() && settleOf(o) == name {
			oim = oim.Add(o.orderIM)
		}
	}
	return pim, oim, upl
}

// fill executes all of o at price. The fee is FeeRate of the value, in the coin Bybit
// charges it in: a spot buy in the base coin (the buyer receives qty less the fee), a spot
// sell in the quote coin, linear in the settle coin; or, when SetFeeCoin chose one and the
// wallet holds enough of it, in that coin instead (Bybit's fee deduction in a third coin).
func (s *Server) fill(o *order, price decimal.Decimal) *failure {
	value := o.qty.Mul(price)
	if o.category == "spot" {
		base, quote := s.coin(baseOf(o)), s.coin(quoteOf(o))
		if o.side == "Buy" {
			if value.GreaterThan(quote.balance.Sub(quote.locked)) {
				return fail(170131, "Balance insufficient")
			}
			quote.balance = quote.balance.Sub(value)
			base.balance = base.balance.Add(o.qty)
		} else {
			if o.qty.GreaterThan(base.balance.Sub(base.locked)) {
				return fail(170131, "Balance insufficient")
			}
			base.balance = base.balance.Sub(o.qty)
			quote.balance = quote.balance.Add(value)
		}
		o.cumQty = o.qty
	} else if f := s.fillLinear(o, price); f != nil {
		return f
	}
	o.avgPrice, o.cumValue = price, o.cumQty.Mul(price)
	o.cumFee, o.feeCoin = s.charge(o, o.cumValue)
	o.status = "Filled"
	if o.cumQty.LessThan(o.qty) {
		o.status = "Cancelled" // a reduce-only remainder beyond the position
	}
	return nil
}

// charge takes the fee of a fill of value (in quote) from the wallet and says in which coin.
func (s *Server) charge(o *order, value decimal.Decimal) (decimal.Decimal, string) {
	inQuote := value.Mul(FeeRate)
	if s.feeCoin != "" && s.feeCoinPrice.IsPositive() {
		fee := inQuote.DivRound(s.feeCoinPrice, 8)
		if c := s.coin(s.feeCoin); fee.IsPositive() && c.balance.Sub(c.locked).GreaterThanOrEqual(fee) {
			c.balance = c.balance.Sub(fee)
			return fee, s.feeCoin
		}
	}
	switch {
	case o.category == "spot" && o.side == "Buy":
		fee := o.cumQty.Mul(FeeRate)
		s.coin(baseOf(o)).balance = s.coin(baseOf(o)).balance.Sub(fee)
		return fee, baseOf(o)
	case o.category == "spot":
		s.coin(quoteOf(o)).balance = s.coin(quoteOf(o)).balance.Sub(inQuote)
		return inQuote, quoteOf(o)
	}
	s.coin(settleOf(o)).balance = s.coin(settleOf(o)).balance.Sub(inQuote)
	return inQuote, settleOf(o)
}

// fillLinear applies a linear fill to the position o names (positionIdx): the part
// opposite to the position reduces it (realising PnL and releasing margin), the rest opens
// or adds (taking margin). An order that only closes (reduce-only, or a hedge-mode order
// against its side) is cut to the position and refused when there is none.
func (s *Server) fillLinear(o *order, price decimal.Decimal) *failure {
	settle := s.coin(settleOf(o))
	key := posKey{o.symbol, o.positionIdx}
	p := s.positions[key]
	if p == nil {
		p = &position{}
	}
	qty := o.qty
	sign := decimal.NewFromInt(1)
	if o.side == "Sell" {
		sign = sign.Neg()
	}
	opposite := !p.size.IsZero() && p.size.Sign() != sign.Sign()
	if o.closes() {
		if !opposite {
			return fail(110017, "Reduce-only rule not satisfied")
		}
		qty = decimal.Min(qty, p.size.Abs())
	}
	reduce := decimal.Zero
	if opposite {
		reduce = decimal.Min(qty, p.size.Abs())
	}
	open := qty.Sub(reduce)
	fee := qty.Mul(price).Mul(FeeRate)
	lev := decimal.NewFromInt(int64(s.lev(o.symbol)))
	im := open.Mul(price).Div(lev)
	if open.IsPositive() && im.Add(fee).GreaterThan(s.available(settleOf(o)).Add(o.orderIM)) {
		return fail(110007, "ab not enough for new order")
	}
	o.orderIM = decimal.Zero
	now := s.now().UnixMilli()
	if reduce.IsPositive() {
		pnl := price.Sub(p.entry).Mul(reduce).Mul(decimal.NewFromInt(int64(p.size.Sign())))
		share := p.margin
		if reduce.LessThan(p.size.Abs()) {
			share = p.margin.Mul(reduce).Div(p.size.Abs())
		}
		settle.balance = settle.balance.Add(pnl)
		p.margin = p.margin.Sub(share)
		p.size = p.size.Add(reduce.Mul(sign))
		if p.size.IsZero() {
			p = &position{}
		}
	}
	if open.IsPositive() {
		size := p.size.Abs()
		p.entry = p.entry.Mul(size).Add(price.Mul(open)).Div(size.Add(open))
		p.size = p.size.Add(open.Mul(sign))
		p.margin = p.margin.Add(im)
		if p.created == 0 {
			p.created = now
		}
	}
	p.updated = now
	if p.size.IsZero() {
		delete(s.positions, key)
	} else {
		s.positions[key] = p
	}
	o.cumQty = qty
	return nil
}

func (s *Server) setLeverage(_ map[string]string, body []byte) (any, *failure) {
	var r struct {
		Category     string `json:"category"`
		Symbol       string `json:"symbol"`
		BuyLeverage  string `json:"buyLeverage"`
		SellLeverage string `json:"sellLeverage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fail(10001, "params error: %v", err)
	}
	in := findInstrument(r.Category, r.Symbol)
	if r.Category != "linear" || in == nil {
		return nil, fail(10001, "params error: symbol invalid")
	}
	buy, ok1 := dec(r.BuyLeverage)
	sell, ok2 := dec(r.SellLeverage)
	max := decimal.RequireFromString(in.maxLeverage)
	if !ok1 || !ok2 || !buy.Equal(sell) || buy.LessThan(decimal.NewFromInt(1)) || buy.GreaterThan(max) || !buy.IsInteger() {
		return nil, fail(10001, "params error: leverage invalid, max %s", in.maxLeverage)
	}
	l := int(buy.IntPart())
	if l == s.lev(r.Symbol) {
		return nil, fail(110043, "leverage not modified")
	}
	s.leverage[r.Symbol] = l
	return map[string]any{}, nil
}

func (s *Server) cancelOrder(_ map[string]string, body []byte) (any, *failure) {
	var r struct {
		Category    string `json:"category"`
		Symbol      string `json:"symbol"`
		OrderID     string `json:"orderId"`
		OrderLinkID string `json:"orderLinkId"`
		OrderFilter string `json:"orderFilter"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fail(10001, "params error: %v", err)
	}
	spot := r.Category == "spot"
	o := s.byID[r.OrderID]
	if r.OrderID == "" {
		o = s.byLink[r.OrderLinkID]
	}
	notFound := func() *failure {
		if spot {
			return fail(170213, "Order does not exist.")
		}
		return fail(110001, "order not exists or too late to cancel")
	}
	if o == nil || o.category != r.Category || o.symbol != r.Symbol || o.finished() {
		return nil, notFound()
	}
	if spot {
		filter := r.OrderFilter
		if filter == "" {
			filter = "Order"
		}
		want := o.orderFilter
		if want == "" {
			want = "Order"
		}
		if filter != want {
			return nil, notFound()
		}
	}
	s.release(o)
	o.status = "Cancelled"
	if o.stopOrderType != "" && o.cumQty.IsZero() {
		o.status = "Deactivated"
	}
	o.updated = s.now().UnixMilli()
	return map[string]string{"orderId": o.id, "orderLinkId": o.link}, nil
}

func (s *Server) realtime(q map[string]string, _ []byte) (any, *failure) {
	return s.list(q, true)
}

func (s *Server) history(q map[string]string, _ []byte) (any, *failure) {
	return s.list(q, false)
}

// list answers realtime (open orders; finished ones too when asked by ID, unless forgotten)
// and history (everything).
func (s *Server) list(q map[string]string, realtime bool) (any, *failure) {
	cat := q["category"]
	if cat != "spot" && cat != "linear" {
		return nil, fail(10001, "params error: category invalid")
	}
	byID := q["orderId"] != "" || q["orderLinkId"] != ""
	if cat == "linear" && q["symbol"] == "" && q["settleCoin"] == "" && q["baseCoin"] == "" && !byID {
		return nil, fail(10001, "params error: symbol, baseCoin or settleCoin is required")
	}
	list := []map[string]any{}
	for i := len(s.orders) - 1; i >= 0; i-- {
		o := s.orders[i]
		switch {
		case o.category != cat,
			q["symbol"] != "" && o.symbol != q["symbol"],
			q["orderId"] != "" && o.id != q["orderId"],
			q["orderLinkId"] != "" && o.link != q["orderLinkId"],
			realtime && o.finished() && (!byID || s.forgotten[o.id]):
			continue
		}
		list = append(list, o.json())
		if len(list) == 50 {
			break
		}
	}
	return map[string]any{"category": cat, "list": list, "nextPageCursor": ""}, nil
}

func (s *Server) walletBalance(q map[string]string, _ []byte) (any, *failure) {
	if q["accountType"] != "UNIFIED" {
		return nil, fail(10001, "accountType only support UNIFIED")
	}
	var want map[string]bool
	if q["coin"] != "" {
		want = map[string]bool{}
		for _, c := range strings.Split(q["coin"], ",") {
			want[c] = true
		}
	}
	coins := []map[string]string{}
	total := decimal.Zero
	for name, c := range s.wallet {
		pim, oim, upl := s.margins(name)
		if (want != nil && !want[name]) || (c.balance.IsZero() && pim.IsZero() && oim.IsZero()) {
			continue
		}
		equity := c.balance.Add(upl)
		total = total.Add(equity)
		coins = append(coins, map[string]string{"coin": name, "equity": equity.String(), "usdValue": equity.String(),
			"walletBalance": c.balance.String(), "locked": c.locked.String(), "spotHedgingQty": "0",
			"borrowAmount": "0", "availableToWithdraw": "", "accruedInterest": "0", "totalOrderIM": oim.String(),
			"totalPositionIM": pim.String(), "totalPositionMM": "0", "unrealisedPnl": upl.String(),
			"cumRealisedPnl": "0", "bonus": "0", "marginCollateral": "true", "collateralSwitch": "true"})
	}
	return map[string]any{"list": []map[string]any{{"accountType": "UNIFIED", "accountIMRate": "0",
		"accountMMRate": "0", "totalEquity": total.String(), "totalWalletBalance": total.String(),
		"totalMarginBalance": total.String(), "totalAvailableBalance": total.String(), "totalPerpUPL": "0",
		"totalInitialMargin": "0", "totalMaintenanceMargin": "0", "coin": coins}}}, nil
}
