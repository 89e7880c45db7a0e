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

// position is a one-way linear position.
type position struct {
	size   decimal.Decimal // signed: long > 0
	entry  decimal.Decimal
	margin decimal.Decimal // initial margin held
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
	lastPriceOnCreated                          decimal.Decimal
	avgPrice, cumQty, cumValue, cumFee          decimal.Decimal
	lockedQuote, lockedBase, orderIM            decimal.Decimal
	created, updated                            int64
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
	return map[string]any{
		"orderId": o.id, "orderLinkId": o.link, "blockTradeId": "", "symbol": o.symbol, "price": price,
		"qty": o.qtyText, "side": o.side, "isLeverage": "0", "positionIdx": 0, "orderStatus": o.status,
		"cancelType": "UNKNOWN", "rejectReason": o.rejectReason, "avgPrice": avg,
		"leavesQty": o.qty.Sub(o.cumQty).String(), "leavesValue": "0", "cumExecQty": o.cumQty.String(),
		"cumExecValue": o.cumValue.String(), "cumExecFee": o.cumFee.String(), "timeInForce": tif(o.orderType),
		"orderType": o.orderType, "stopOrderType": stop, "orderIv": "", "marketUnit": o.marketUnit,
		"triggerPrice": trigger, "takeProfit": "", "stopLoss": "", "tpTriggerBy": "", "slTriggerBy": "",
		"triggerDirection": o.triggerDirection, "triggerBy": "LastPrice",
		"lastPriceOnCreated": o.lastPriceOnCreated.String(), "reduceOnly": o.reduceOnly,
		"closeOnTrigger": o.closeOnTrigger, "smpType": "None", "smpGroup": 0, "smpOrderId": "",
		"tpslMode": "", "tpLimitPrice": "", "slLimitPrice": "", "placeType": "",
		"createdTime": strconv.FormatInt(o.created, 10), "updatedTime": strconv.FormatInt(o.updated, 10),
	}
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
	TriggerDirection                                                int
	ReduceOnly, CloseOnTrigger                                      bool
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
		CloseOnTrigger: o.closeOnTrigger, CreatedAt: time.UnixMilli(o.created)}, true
}

// Position is a linear symbol's position: signed size (long > 0), entry price, margin.
func (s *Server) Position(symbol string) (size, entry, margin decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.positions[symbol]; p != nil {
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

// triggerRises: a spot conditional triggers on a rise when its trigger was above the price.
func (o *order) triggerRises() bool { return o.trigger.GreaterThan(o.lastPriceOnCreated) }

func (s *Server) coin(name string) *coin {
	c := s.wallet[name]
	if c == nil {
		c = &coin{}
		s.wallet[name] = c
	}
	return c
}

func (s *Server) price(symbol string) decimal.Decimal { return s.prices[symbol] }

// createRequest is the body of /v5/order/create.
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
	ReduceOnly       bool   `json:"reduceOnly"`
	CloseOnTrigger   bool   `json:"closeOnTrigger"`
}

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

func (s *Server) createOrder(_ map[string]string, body []byte) (any, *failure) {
	var r createRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fail(10001, "params error: %v", err)
	}
	spot := r.Category == "spot"
	if !spot && r.Category != "linear" {
		return nil, fail(10001, "params error: category invalid")
	}
	in := findInstrument(r.Category, r.Symbol)
	if in == nil || in.status != "Trading" {
		if spot {
			return nil, fail(170121, "Invalid symbol.")
		}
		return nil, fail(10001, "params error: symbol invalid")
	}
	if r.Side != "Buy" && r.Side != "Sell" {
		return nil, fail(10001, "params error: side invalid")
	}
	if r.OrderType != "Market" && r.OrderType != "Limit" {
		return nil, fail(10001, "params error: orderType invalid")
	}
	if r.OrderLinkID == "" || !validLink(r.OrderLinkID) {
		return nil, fail(10001, "params error: orderLinkId invalid")
	}
	if s.byLink[r.OrderLinkID] != nil {
		if spot {
			return nil, fail(170141, "Duplicate clientOrderId")
		}
		return nil, fail(110072, "OrderLinkedID is duplicate")
	}
	qty, ok := dec(r.Qty)
	if !ok || !qty.IsPositive() {
		return nil, fail(10001, "params error: qty invalid")
	}
	tick := decimal.RequireFromString(in.tick)
	last := s.price(in.symbol)
	now := s.now().UnixMilli()
	s.seq++
	o := &order{id: fmt.Sprintf("%08x-0000-4000-8000-%012x", s.seq, s.seq), link: r.OrderLinkID,
		category: r.Category, symbol: r.Symbol, side: r.Side, orderType: r.OrderType, qtyText: r.Qty, qty: qty,
		reduceOnly: r.ReduceOnly && !spot, closeOnTrigger: r.CloseOnTrigger && !spot, lastPriceOnCreated: last,
		rejectReason: "EC_NoError", created: now, updated: now}
	if r.OrderType == "Limit" {
		p, ok := dec(r.Price)
		switch {
		case !ok || !p.IsPositive():
			return nil, fail(10001, "params error: price invalid")
		case !multiple(p, tick) && spot:
			return nil, fail(170134, "Order price has too many decimals.")
		case !multiple(p, tick):
			return nil, fail(10001, "params error: price invalid, not a multiple of tickSize %s", in.tick)
		}
		o.price, o.priceText = p, r.Price
	}
	if spot {
		if r.OrderFilter != "" && r.OrderFilter != "Order" && r.OrderFilter != "StopOrder" && r.OrderFilter != "tpslOrder" {
			return nil, fail(170201, "Invalid orderFilter parameter")
		}
		o.orderFilter = r.OrderFilter
		if f := s.checkSpot(in, o, r); f != nil {
			return nil, f
		}
	} else if f := s.checkLinear(in, o, r); f != nil {
		return nil, f
	}
	if r.TriggerPrice != "" {
		t, ok := dec(r.TriggerPrice)
		if !ok || !t.IsPositive() || !multiple(t, tick) {
			if spot {
				return nil, fail(170134, "Order price has too many decimals.")
			}
			return nil, fail(10001, "params error: triggerPrice invalid")
		}
		o.trigger, o.triggerText = t, r.TriggerPrice
	}
	switch {
	case spot && (o.orderFilter == "StopOrder" || o.orderFilter == "tpslOrder"):
		if !o.trigger.IsPositive() {
			return nil, fail(170202, "Please enter the TP/SL price.")
		}
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
		default:
			return nil, fail(10001, "params error: TriggerDirection invalid")
		}
		o.triggerDirection, o.status, o.stopOrderType = r.TriggerDirection, "Untriggered", "Stop"
	default:
		if f := s.execute(o); f != nil {
			return nil, f
		}
	}
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
	case !multiple(o.qty, precision):
		return fail(170137, "Order quantity has too many decimals.")
	case o.qty.LessThan(decimal.RequireFromString(in.minQty)):
		return fail(170136, "Order quantity is lower than the minimum.")
	case o.qty.GreaterThan(decimal.RequireFromString(in.maxQty)):
		return fail(170135, "Order quantity exceeded upper limit.")
	}
	ref := o.price
	if !ref.IsPositive() {
		ref = last
	}
	if o.qty.Mul(ref).LessThan(decimal.RequireFromString(in.minAmt)) {
		return fail(170140, "Order value exceeded lower limit.")
	}
	return nil
}

// checkLinear applies the linear lot filters and the reduce-only rule.
func (s *Server) checkLinear(in *instrument, o *order, r createRequest) *failure {
	if r.PositionIdx != nil && *r.PositionIdx != 0 {
		return fail(10001, "position idx not match position mode")
	}
	step := decimal.RequireFromString(in.qtyStep)
	switch {
	case !multiple(o.qty, step):
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
	if !o.reduceOnly && o.qty.Mul(ref).LessThan(decimal.RequireFromString(in.minNotional)) {
		return fail(110094, "Order does not meet minimum order value %s%s", in.minNotional, in.settle)
	}
	return nil
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
	if o.reduceOnly {
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
	for sym, p := range s.positions {
		if in := findInstrument("linear", sym); in != nil && in.settle == name {
			pim = pim.Add(p.margin)
			upl = upl.Add(s.price(sym).Sub(p.entry).Mul(p.size))
		}
	}
	for _, o := range s.orders {
		if o.category == "linear" && !o.finished() && settleOf(o) == name {
			oim = oim.Add(o.orderIM)
		}
	}
	return pim, oim, upl
}

// fill executes all of o at price.
func (s *Server) fill(o *order, price decimal.Decimal) *failure {
	var fee decimal.Decimal
	if o.category == "spot" {
		base, quote := s.coin(baseOf(o)), s.coin(quoteOf(o))
		value := o.qty.Mul(price)
		if o.side == "Buy" {
			if value.GreaterThan(quote.balance.Sub(quote.locked)) {
				return fail(170131, "Insufficient balance.")
			}
			fee = o.qty.Mul(FeeRate)
			quote.balance = quote.balance.Sub(value)
			base.balance = base.balance.Add(o.qty).Sub(fee)
		} else {
			if o.qty.GreaterThan(base.balance.Sub(base.locked)) {
				return fail(170131, "Insufficient balance.")
			}
			fee = value.Mul(FeeRate)
			base.balance = base.balance.Sub(o.qty)
			quote.balance = quote.balance.Add(value).Sub(fee)
		}
	} else if f := s.fillLinear(o, price); f != nil {
		return f
	} else {
		fee = o.cumQty.Mul(price).Mul(FeeRate)
	}
	if o.category == "spot" {
		o.cumQty = o.qty
	}
	o.avgPrice, o.cumValue, o.cumFee = price, o.cumQty.Mul(price), fee
	o.status = "Filled"
	if o.cumQty.LessThan(o.qty) {
		o.status = "Cancelled" // a reduce-only remainder beyond the position
	}
	return nil
}

// fillLinear applies a one-way linear fill: the part opposite to the position reduces it
// (realising PnL and releasing margin), the rest opens or adds (taking margin); the fee is
// charged on the whole.
func (s *Server) fillLinear(o *order, price decimal.Decimal) *failure {
	settle := s.coin(settleOf(o))
	p := s.positions[o.symbol]
	if p == nil {
		p = &position{}
	}
	qty := o.qty
	sign := decimal.NewFromInt(1)
	if o.side == "Sell" {
		sign = sign.Neg()
	}
	opposite := !p.size.IsZero() && p.size.Sign() != sign.Sign()
	if o.reduceOnly {
		if !opposite {
			return fail(110017, "current position is zero, cannot fix reduce-only order qty")
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
	}
	settle.balance = settle.balance.Sub(fee)
	if p.size.IsZero() {
		delete(s.positions, o.symbol)
	} else {
		s.positions[o.symbol] = p
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
