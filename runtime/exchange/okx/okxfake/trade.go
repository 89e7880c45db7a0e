package okxfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// coin is a currency of the trading account.
type coin struct {
	cash   decimal.Decimal
	frozen decimal.Decimal // spot locks of resting orders
}

// position is a cross swap position: in net mode pos is signed (long > 0), in long/short
// mode each side has its own, positive. Sizes are contracts.
type position struct {
	pos    decimal.Decimal
	avgPx  decimal.Decimal
	margin decimal.Decimal
}

// order is an ordinary order (a triggered algo order's too).
type order struct {
	ordID, clOrdID, instID, instType, tdMode string
	side, posSide, ordType, state, tgtCcy    string
	szText, pxText                           string
	sz, px                                   decimal.Decimal
	reduceOnly, banAmend                     bool
	accFill, avgPx, fee                      decimal.Decimal // fee negative: a charge
	feeCcy                                   string
	algoID, algoClOrdID, source              string
	lockedQuote, lockedBase, ordMargin       decimal.Decimal
	created, updated                         int64
	cancelSource                             string
	fillTime                                 int64
}

func (o *order) pending() bool { return o.state == "live" || o.state == "partially_filled" }

func (o *order) json() map[string]any {
	avg, fillPx := "", ""
	if o.accFill.IsPositive() {
		avg, fillPx = o.avgPx.String(), o.avgPx.String()
	}
	fee := o.fee.String()
	return map[string]any{
		"instType": o.instType, "instId": o.instID, "tgtCcy": o.tgtCcy, "ccy": "", "ordId": o.ordID,
		"clOrdId": o.clOrdID, "tag": "", "px": o.pxText, "pxUsd": "", "pxVol": "", "pxType": "", "sz": o.szText,
		"pnl": "0", "ordType": o.ordType, "side": o.side, "posSide": o.posSide, "tdMode": o.tdMode,
		"accFillSz": o.accFill.String(), "fillPx": fillPx, "tradeId": "", "fillSz": o.accFill.String(),
		"fillTime": fmtMS(o.fillTime), "avgPx": avg, "state": o.state, "stpId": "", "stpMode": "cancel_maker",
		"lever": "", "attachAlgoClOrdId": "", "tpTriggerPx": "", "tpTriggerPxType": "", "tpOrdPx": "",
		"slTriggerPx": "", "slTriggerPxType": "", "slOrdPx": "", "attachAlgoOrds": []any{},
		"linkedAlgoOrd": map[string]string{"algoId": ""}, "feeCcy": o.feeCcy, "fee": fee, "rebateCcy": o.feeCcy,
		"rebate": "0", "source": o.source, "category": "normal", "reduceOnly": strconv.FormatBool(o.reduceOnly),
		"isTpLimit": "false", "cancelSource": o.cancelSource, "cancelSourceReason": "", "quickMgnType": "",
		"algoClOrdId": o.algoClOrdID, "algoId": o.algoID, "uTime": fmtMS(o.updated), "cTime": fmtMS(o.created),
		"tradeQuoteCcy": "",
	}
}

func fmtMS(ms int64) string {
	if ms == 0 {
		return ""
	}
	return strconv.FormatInt(ms, 10)
}

// algo is a conditional algo order.
type algo struct {
	algoID, algoClOrdID, instID, instType, tdMode string
	side, posSide, state, tgtCcy, closeFraction   string
	szText                                        string
	sz                                            decimal.Decimal
	reduceOnly                                    bool
	slTrigger, slOrdPx, slType                    string
	tpTrigger, tpOrdPx, tpType                    string
	ordID, failCode                               string
	last                                          decimal.Decimal
	created, updated, triggered                   int64
}

func (a *algo) json() map[string]any {
	ordIDs := []string{}
	if a.ordID != "" {
		ordIDs = append(ordIDs, a.ordID)
	}
	return map[string]any{
		"instType": a.instType, "instId": a.instID, "ccy": "", "ordId": a.ordID, "ordIdList": ordIDs,
		"algoId": a.algoID, "clOrdId": "", "sz": a.szText, "closeFraction": a.closeFraction, "ordType": "conditional",
		"side": a.side, "posSide": a.posSide, "tdMode": a.tdMode, "tgtCcy": a.tgtCcy, "state": a.state, "lever": "",
		"tpTriggerPx": a.tpTrigger, "tpTriggerPxType": a.tpType, "tpOrdPx": a.tpOrdPx,
		"slTriggerPx": a.slTrigger, "slTriggerPxType": a.slType, "slOrdPx": a.slOrdPx,
		"triggerPx": "", "triggerPxType": "", "ordPx": "", "actualSz": "", "actualPx": "", "actualSide": "",
		"triggerTime": fmtMS(a.triggered), "tag": "", "reduceOnly": strconv.FormatBool(a.reduceOnly),
		"last": a.last.String(), "failCode": a.failCode, "algoClOrdId": a.algoClOrdID, "amendPxOnTriggerType": "0",
		"attachAlgoOrds": []any{}, "cTime": fmtMS(a.created), "uTime": fmtMS(a.updated), "quickMgnType": "",
		"isTradeBorrowMode": "",
	}
}

// Order is an order as the fake holds it, for tests.
type Order struct {
	OrdID, ClOrdID, InstID, TdMode, Side, PosSide, OrdType, State, TgtCcy string
	Sz, Px, AccFillSz, AvgPx, Fee                                         decimal.Decimal
	FeeCcy                                                                string
	ReduceOnly, BanAmend                                                  bool
	AlgoID, AlgoClOrdID                                                   string
	CreatedAt                                                             time.Time
}

// Order finds the latest order holding clOrdId.
func (s *Server) Order(clOrdID string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.latest(clOrdID)
	if o == nil {
		return Order{}, false
	}
	return exported(o), true
}

// OrderByID finds an order by ordId.
func (s *Server) OrderByID(ordID string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.byOrdID[ordID]
	if o == nil {
		return Order{}, false
	}
	return exported(o), true
}

func exported(o *order) Order {
	return Order{OrdID: o.ordID, ClOrdID: o.clOrdID, InstID: o.instID, TdMode: o.tdMode, Side: o.side,
		PosSide: o.posSide, OrdType: o.ordType, State: o.state, TgtCcy: o.tgtCcy, Sz: o.sz, Px: o.px,
		AccFillSz: o.accFill, AvgPx: o.avgPx, Fee: o.fee, FeeCcy: o.feeCcy, ReduceOnly: o.reduceOnly,
		BanAmend: o.banAmend, AlgoID: o.algoID, AlgoClOrdID: o.algoClOrdID, CreatedAt: time.UnixMilli(o.created)}
}

// Algo is an algo order as the fake holds it, for tests.
type Algo struct {
	AlgoID, AlgoClOrdID, InstID, TdMode, Side, PosSide, State, TgtCcy, CloseFraction string
	Sz                                                                               decimal.Decimal
	ReduceOnly                                                                       bool
	SlTriggerPx, SlOrdPx, SlTriggerPxType, TpTriggerPx, TpOrdPx, TpTriggerPxType     string
	OrdID, FailCode                                                                  string
}

// Algo finds an algo order by algoClOrdId.
func (s *Server) Algo(algoClOrdID string) (Algo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.algos) - 1; i >= 0; i-- {
		if a := s.algos[i]; a.algoClOrdID == algoClOrdID {
			return Algo{AlgoID: a.algoID, AlgoClOrdID: a.algoClOrdID, InstID: a.instID, TdMode: a.tdMode, Side: a.side,
				PosSide: a.posSide, State: a.state, TgtCcy: a.tgtCcy, CloseFraction: a.closeFraction, Sz: a.sz,
				ReduceOnly: a.reduceOnly, SlTriggerPx: a.slTrigger, SlOrdPx: a.slOrdPx, SlTriggerPxType: a.slType,
				TpTriggerPx: a.tpTrigger, TpOrdPx: a.tpOrdPx, TpTriggerPxType: a.tpType, OrdID: a.ordID,
				FailCode: a.failCode}, true
		}
	}
	return Algo{}, false
}

// Position is a swap position (posSide net, long or short): contracts (signed in net
// mode), average price and margin.
func (s *Server) Position(instID, posSide string) (pos, avgPx, margin decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.positions[instID+"|"+posSide]; p != nil {
		return p.pos, p.avgPx, p.margin
	}
	return decimal.Zero, decimal.Zero, decimal.Zero
}

// Leverage is a swap instrument's cross leverage (10 until set).
func (s *Server) Leverage(instID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lev(instID)
}

func (s *Server) lev(instID string) int {
	if l, ok := s.leverage[instID]; ok {
		return l
	}
	return 10
}

func (s *Server) coin(name string) *coin {
	c := s.coins[name]
	if c == nil {
		c = &coin{}
		s.coins[name] = c
	}
	return c
}

func (s *Server) latest(clOrdID string) *order {
	for i := len(s.orders) - 1; i >= 0; i-- {
		if s.orders[i].clOrdID == clOrdID && clOrdID != "" {
			return s.orders[i]
		}
	}
	return nil
}

func (s *Server) nextID() string {
	s.seq++
	return strconv.FormatInt(680800019749904384+int64(s.seq), 10)
}

// SetPrice sets a pair's last price ("BTC-USDT", or either instId: spot and swap share it)
// and fills what it crosses: resting limit orders at their price, triggered algo orders
// through the order they place.
func (s *Server) SetPrice(instOrPair string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pair(instOrPair)
	s.prices[p] = price
	now := s.now().UnixMilli()
	for _, o := range s.orders {
		if pair(o.instID) != p || !o.pending() || o.ordType != "limit" {
			continue
		}
		if (o.side == "buy" && price.LessThanOrEqual(o.px)) || (o.side == "sell" && price.GreaterThanOrEqual(o.px)) {
			s.release(o)
			if f := s.fill(o, o.px); f != nil {
				o.state, o.cancelSource = "canceled", strconv.Itoa(f.code)
			}
			o.updated = now
		}
	}
	for _, a := range s.algos {
		if pair(a.instID) != p || a.state != "live" || !a.fires(price) {
			continue
		}
		s.trigger(a, now)
	}
}

// fires reports whether price triggers the algo order: a sell's stop-loss on a fall to its
// trigger and its take-profit on a rise, a buy's the other way round.
func (a *algo) fires(price decimal.Decimal) bool {
	sell := a.side == "sell"
	if t, ok := dec(a.slTrigger); ok {
		if (sell && price.LessThanOrEqual(t)) || (!sell && price.GreaterThanOrEqual(t)) {
			return true
		}
	}
	if t, ok := dec(a.tpTrigger); ok {
		if (sell && price.GreaterThanOrEqual(t)) || (!sell && price.LessThanOrEqual(t)) {
			return true
		}
	}
	return false
}

// trigger places a triggered algo order's order: at the market (ordPx -1) or its limit
// price, for sz or, with closeFraction, the whole position.
func (s *Server) trigger(a *algo, now int64) {
	a.triggered, a.updated = now, now
	in := s.instrument(a.instID)
	ordPx := a.slOrdPx
	if a.tpTrigger != "" && a.slTrigger == "" {
		ordPx = a.tpOrdPx
	}
	o := &order{ordID: s.nextID(), instID: a.instID, instType: a.instType, tdMode: a.tdMode, side: a.side,
		posSide: a.posSide, ordType: "market", tgtCcy: a.tgtCcy, reduceOnly: a.reduceOnly, algoID: a.algoID,
		algoClOrdID: a.algoClOrdID, source: "7", sz: a.sz, szText: a.szText, created: now, updated: now, banAmend: true}
	if in.instType == "SPOT" && o.tgtCcy == "" {
		o.tgtCcy = "base_ccy"
	}
	if ordPx != "-1" {
		o.ordType, o.pxText = "limit", ordPx
		o.px, _ = dec(ordPx)
	}
	if a.closeFraction != "" {
		size := s.closable(a.instID, a.side, a.posSide)
		if !size.IsPositive() {
			a.state, a.failCode = "order_failed", "51169"
			return
		}
		o.sz, o.szText = size, size.String()
	}
	if f := s.execute(o); f != nil {
		a.state, a.failCode = "order_failed", strconv.Itoa(f.code)
		return
	}
	s.orders = append(s.orders, o)
	s.byOrdID[o.ordID] = o
	a.state, a.ordID = "effective", o.ordID
}

// closable is the size an exit on side (and posSide) would close.
func (s *Server) closable(instID, side, posSide string) decimal.Decimal {
	if posSide == "long" || posSide == "short" {
		if p := s.positions[instID+"|"+posSide]; p != nil {
			return p.pos
		}
		return decimal.Zero
	}
	p := s.positions[instID+"|net"]
	if p == nil || (side == "sell") == p.pos.IsNegative() {
		return decimal.Zero
	}
	return p.pos.Abs()
}

// --- parameters ---

var validClID = regexp.MustCompile(`^[A-Za-z0-9]{1,32}$`)

// flexBool reads a boolean sent as JSON true/false or as "true"/"false".
type flexBool bool

func (b *flexBool) UnmarshalJSON(data []byte) error {
	switch strings.Trim(string(data), `"`) {
	case "true":
		*b = true
	case "false", "", "null":
		*b = false
	default:
		return errors.New("not a boolean")
	}
	return nil
}

// decode reads a JSON body; a field of the wrong type is 51000 "Parameter {field} error".
func decode(body []byte, into any) *failure {
	if err := json.Unmarshal(body, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badParam(te.Field)
		}
		return &failure{code: 50002, msg: "JSON syntax error", status: 400}
	}
	return nil
}

func dec(s string) (decimal.Decimal, bool) {
	if s == "" {
		return decimal.Zero, false
	}
	d, err := decimal.NewFromString(s)
	return d, err == nil
}

func multiple(v, step decimal.Decimal) bool { return step.IsPositive() && v.Mod(step).IsZero() }

func required(pairs ...string) *failure {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return emptyParam(pairs[i])
		}
	}
	return nil
}

// checkTdMode: spot trades take cash (cross or isolated on spot are margin trading, which
// the fake's account does not have); swaps take cross or isolated, never cash.
func checkTdMode(in *instrument, tdMode string) *failure {
	if in.instType == "SPOT" {
		if tdMode != "cash" {
			return badParam("tdMode")
		}
		return nil
	}
	if tdMode != "cross" && tdMode != "isolated" {
		return badParam("tdMode")
	}
	return nil
}

// checkPosSide: in long/short mode a swap order names long or short; in net mode it names
// none (or net).
func (s *Server) checkPosSide(in *instrument, posSide string) *failure {
	if in.instType != "SWAP" {
		return nil
	}
	if s.posMode == LongShortMode {
		if posSide != "long" && posSide != "short" {
			return badParam("posSide")
		}
		return nil
	}
	if posSide != "" && posSide != "net" {
		return badParam("posSide")
	}
	return nil
}

func withIDs(f *failure, ids map[string]string) *failure {
	if f != nil && f.item {
		f.ids = ids
	}
	return f
}

// --- orders ---

type placeReq struct {
	InstID     string   `json:"instId"`
	TdMode     string   `json:"tdMode"`
	ClOrdID    string   `json:"clOrdId"`
	Side       string   `json:"side"`
	PosSide    string   `json:"posSide"`
	OrdType    string   `json:"ordType"`
	Sz         string   `json:"sz"`
	Px         string   `json:"px"`
	TgtCcy     string   `json:"tgtCcy"`
	ReduceOnly flexBool `json:"reduceOnly"`
	BanAmend   flexBool `json:"banAmend"`
}

func (s *Server) placeOrder(_ map[string]string, body []byte) (any, *failure) {
	var r placeReq
	if f := decode(body, &r); f != nil {
		return nil, f
	}
	ids := map[string]string{"clOrdId": r.ClOrdID}
	o, f := s.newOrder(r)
	if f != nil {
		return nil, withIDs(f, ids)
	}
	if f := s.execute(o); f != nil {
		return nil, withIDs(f, ids)
	}
	s.orders = append(s.orders, o)
	s.byOrdID[o.ordID] = o
	s.created[o.clOrdID]++
	return []map[string]string{{"clOrdId": o.clOrdID, "ordId": o.ordID, "tag": "", "ts": fmtMS(o.created),
		"sCode": "0", "sMsg": "Order placed"}}, nil
}

// newOrder validates a placement as OKX does and makes the order.
func (s *Server) newOrder(r placeReq) (*order, *failure) {
	if f := required("instId", r.InstID, "tdMode", r.TdMode, "side", r.Side, "ordType", r.OrdType, "sz", r.Sz); f != nil {
		return nil, f
	}
	if r.ClOrdID != "" && !validClID.MatchString(r.ClOrdID) {
		return nil, badParam("clOrdId")
	}
	in := s.instrument(r.InstID)
	if in == nil || in.state != "live" {
		return nil, refuse(51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if r.Side != "buy" && r.Side != "sell" {
		return nil, badParam("side")
	}
	if r.OrdType != "market" && r.OrdType != "limit" {
		return nil, badParam("ordType")
	}
	if f := checkTdMode(in, r.TdMode); f != nil {
		return nil, f
	}
	if f := s.checkPosSide(in, r.PosSide); f != nil {
		return nil, f
	}
	spot := in.instType == "SPOT"
	if spot && bool(r.ReduceOnly) {
		return nil, refuse(51139, "Reduce-only feature is unavailable for the spot transactions by spot mode.")
	}
	if r.TgtCcy != "" && (r.TgtCcy != "base_ccy" && r.TgtCcy != "quote_ccy" || !spot) {
		return nil, badParam("tgtCcy")
	}
	if r.ClOrdID != "" {
		if o := s.latest(r.ClOrdID); o != nil && o.pending() {
			return nil, refuse(51016, "Client order ID already exists.")
		}
	}
	sz, ok := dec(r.Sz)
	if !ok || !sz.IsPositive() {
		return nil, badParam("sz")
	}
	now := s.now().UnixMilli()
	o := &order{ordID: s.nextID(), clOrdID: r.ClOrdID, instID: in.instID, instType: in.instType, tdMode: r.TdMode,
		side: r.Side, posSide: r.PosSide, ordType: r.OrdType, state: "live", szText: r.Sz, sz: sz,
		reduceOnly: bool(r.ReduceOnly) && s.posMode == NetMode, banAmend: bool(r.BanAmend), created: now, updated: now}
	if !spot && o.posSide == "" {
		o.posSide = "net"
	}
	tick := decimal.RequireFromString(in.tickSz)
	if r.OrdType == "limit" {
		if r.Px == "" {
			return nil, refuse(51204, "The price for the limit order cannot be empty.")
		}
		px, ok := dec(r.Px)
		if !ok || !px.IsPositive() || !multiple(px, tick) {
			return nil, badParam("px")
		}
		o.px, o.pxText = px, r.Px
	}
	qty := sz
	if spot && r.OrdType == "market" {
		o.tgtCcy = r.TgtCcy
		if o.tgtCcy == "" {
			o.tgtCcy = "base_ccy"
			if r.Side == "buy" {
				o.tgtCcy = "quote_ccy" // OKX's default for a market buy: sz is the quote to spend
			}
		}
		if o.tgtCcy == "quote_ccy" && r.Side == "buy" {
			last := s.price(in.instID)
			if !last.IsPositive() {
				return nil, fail(50026, "System error. Try again later")
			}
			lot := decimal.RequireFromString(in.lotSz)
			qty = sz.Div(last).Div(lot).Floor().Mul(lot)
		}
	}
	if o.tgtCcy != "quote_ccy" || r.Side != "buy" {
		if !multiple(qty, decimal.RequireFromString(in.lotSz)) {
			return nil, refuse(51121, "Order quantity must be a multiple of the lot size.")
		}
	}
	if qty.LessThan(decimal.RequireFromString(in.minSz)) {
		return nil, refuse(51020, "Your order should meet or exceed the minimum order amount.")
	}
	o.sz = qty
	return o, nil
}

// execute runs an order now: a market order (or a marketable limit) fills at the last
// price; a limit order that is not marketable rests.
func (s *Server) execute(o *order) *failure {
	last := s.price(o.instID)
	if !last.IsPositive() {
		return fail(50026, "System error. Try again later")
	}
	if o.ordType == "limit" && !((o.side == "buy" && last.LessThanOrEqual(o.px)) || (o.side == "sell" && last.GreaterThanOrEqual(o.px))) {
		if f := s.reserve(o); f != nil {
			return f
		}
		o.state = "live"
		return nil
	}
	return s.fill(o, last)
}

func (s *Server) quoteOf(o *order) string {
	in := s.instrument(o.instID)
	if in.instType == "SWAP" {
		return in.settle
	}
	return in.quote
}

func (s *Server) baseOf(o *order) string { return s.instrument(o.instID).base }

func (s *Server) ctVal(instID string) decimal.Decimal {
	in := s.instrument(instID)
	if in.instType != "SWAP" {
		return decimal.NewFromInt(1)
	}
	return decimal.RequireFromString(in.ctVal)
}

// opens reports whether a swap order opens or adds to a position rather than reducing one.
func (s *Server) opens(o *order) bool {
	switch o.posSide {
	case "long":
		return o.side == "buy"
	case "short":
		return o.side == "sell"
	}
	if o.reduceOnly {
		return false
	}
	p := s.positions[o.instID+"|net"]
	return p == nil || p.pos.IsZero() || (o.side == "buy") == p.pos.IsPositive()
}

// reserve holds what a resting limit order needs: the quote of a spot buy, the base of a
// spot sell, the margin of a swap order that opens.
func (s *Server) reserve(o *order) *failure {
	if o.instType == "SPOT" {
		if o.side == "buy" {
			need := o.sz.Mul(o.px)
			c := s.coin(s.quoteOf(o))
			if need.GreaterThan(c.cash.Sub(c.frozen)) {
				return refuse(51008, "Order failed. Insufficient %s balance in account", s.quoteOf(o))
			}
			c.frozen = c.frozen.Add(need)
			o.lockedQuote = need
			return nil
		}
		c := s.coin(s.baseOf(o))
		if o.sz.GreaterThan(c.cash.Sub(c.frozen)) {
			return refuse(51008, "Order failed. Insufficient %s balance in account", s.baseOf(o))
		}
		c.frozen = c.frozen.Add(o.sz)
		o.lockedBase = o.sz
		return nil
	}
	if !s.opens(o) {
		return nil
	}
	im := o.sz.Mul(s.ctVal(o.instID)).Mul(o.px).Div(decimal.NewFromInt(int64(s.lev(o.instID))))
	if im.GreaterThan(s.available(s.quoteOf(o))) {
		return refuse(51008, "Order failed. Insufficient %s margin in account", s.quoteOf(o))
	}
	o.ordMargin = im
	return nil
}

// release gives back what reserve held.
func (s *Server) release(o *order) {
	if o.lockedQuote.IsPositive() {
		c := s.coin(s.quoteOf(o))
		c.frozen = c.frozen.Sub(o.lockedQuote)
		o.lockedQuote = decimal.Zero
	}
	if o.lockedBase.IsPositive() {
		c := s.coin(s.baseOf(o))
		c.frozen = c.frozen.Sub(o.lockedBase)
		o.lockedBase = decimal.Zero
	}
	o.ordMargin = decimal.Zero
}

// margins are a settlement currency's position margin, order margin and unrealised PnL.
func (s *Server) margins(ccy string) (pos, ord, upl decimal.Decimal) {
	for key, p := range s.positions {
		instID, side, _ := strings.Cut(key, "|")
		in := s.instrument(instID)
		if in == nil || in.settle != ccy {
			continue
		}
		pos = pos.Add(p.margin)
		diff := s.price(instID).Sub(p.avgPx).Mul(p.pos).Mul(s.ctVal(instID))
		if side == "short" {
			diff = diff.Neg()
		}
		upl = upl.Add(diff)
	}
	for _, o := range s.orders {
		if o.instType == "SWAP" && o.pending() && s.quoteOf(o) == ccy {
			ord = ord.Add(o.ordMargin)
		}
	}
	return pos, ord, upl
}

// available is a currency's cash that neither spot locks nor swap margin hold, less any
// unrealised loss.
func (s *Server) available(ccy string) decimal.Decimal {
	c := s.coin(ccy)
	pm, om, upl := s.margins(ccy)
	a := c.cash.Sub(c.frozen).Sub(pm).Sub(om)
	if upl.IsNegative() {
		a = a.Add(upl)
	}
	return a
}

// fill executes all of o at price (a reduce-only or closing order at most the position).
func (s *Server) fill(o *order, price decimal.Decimal) *failure {
	qty := o.sz
	if o.instType == "SPOT" {
		base, quote := s.coin(s.baseOf(o)), s.coin(s.quoteOf(o))
		if o.side == "buy" {
			avail := quote.cash.Sub(quote.frozen)
			if qty.Mul(price).GreaterThan(avail) {
				if o.banAmend || o.ordType != "market" {
					return refuse(51008, "Order failed. Insufficient %s balance in account", s.quoteOf(o))
				}
				// OKX's amendment of a base-currency market buy the balance cannot cover:
				// it buys what the balance can.
				lot := decimal.RequireFromString(s.instrument(o.instID).lotSz)
				qty = avail.Div(price).Div(lot).Floor().Mul(lot)
				if !qty.IsPositive() {
					return refuse(51008, "Order failed. Insufficient %s balance in account", s.quoteOf(o))
				}
			}
			fee := qty.Mul(FeeRate)
			quote.cash = quote.cash.Sub(qty.Mul(price))
			base.cash = base.cash.Add(qty).Sub(fee)
			o.fee, o.feeCcy = fee.Neg(), s.baseOf(o)
		} else {
			if qty.GreaterThan(base.cash.Sub(base.frozen)) {
				return refuse(51008, "Order failed. Insufficient %s balance in account", s.baseOf(o))
			}
			fee := qty.Mul(price).Mul(FeeRate)
			base.cash = base.cash.Sub(qty)
			quote.cash = quote.cash.Add(qty.Mul(price)).Sub(fee)
			o.fee, o.feeCcy = fee.Neg(), s.quoteOf(o)
		}
	} else {
		var f *failure
		if qty, f = s.fillSwap(o, price); f != nil {
			return f
		}
	}
	now := s.now().UnixMilli()
	o.accFill, o.avgPx, o.fillTime, o.updated = qty, price, now, now
	o.state = "filled"
	if qty.LessThan(o.sz) {
		o.state = "canceled" // the rest of a reduce-only order beyond the position
	}
	return nil
}

// fillSwap applies a swap fill and returns the size filled: what reduces a position
// realises its PnL and releases margin, what opens takes margin; the fee is charged on the
// whole.
func (s *Server) fillSwap(o *order, price decimal.Decimal) (decimal.Decimal, *failure) {
	settle := s.quoteOf(o)
	cash := s.coin(settle)
	ctVal := s.ctVal(o.instID)
	qty := o.sz
	var key string
	var reduce, open decimal.Decimal
	var dir int64 // the reduced position's direction: +1 long, -1 short
	switch o.posSide {
	case "long", "short":
		key = o.instID + "|" + o.posSide
		p := s.positions[key]
		dir = 1
		if o.posSide == "short" {
			dir = -1
		}
		if s.opens(o) {
			open = qty
		} else {
			if p == nil || p.pos.IsZero() {
				return decimal.Zero, refuse(51169, "Order failed because you don't have any positions in this direction for this contract to reduce or close.")
			}
			qty = decimal.Min(qty, p.pos)
			reduce = qty
		}
	default:
		key = o.instID + "|net"
		p := s.positions[key]
		held := decimal.Zero
		if p != nil {
			held = p.pos
		}
		buy := o.side == "buy"
		opposite := !held.IsZero() && held.IsPositive() != buy
		if o.reduceOnly {
			if held.IsZero() {
				return decimal.Zero, refuse(51169, "Order failed because you don't have any positions in this direction for this contract to reduce or close.")
			}
			if !opposite {
				return decimal.Zero, refuse(51170, "Failed to place order. A reduce-only order can't be the same trading direction as your existing positions.")
			}
			qty = decimal.Min(qty, held.Abs())
		}
		if opposite {
			reduce = decimal.Min(qty, held.Abs())
		}
		open = qty.Sub(reduce)
		dir = int64(held.Sign())
	}
	fee := qty.Mul(ctVal).Mul(price).Mul(FeeRate)
	lev := decimal.NewFromInt(int64(s.lev(o.instID)))
	im := open.Mul(ctVal).Mul(price).Div(lev)
	if open.IsPositive() && im.Add(fee).GreaterThan(s.available(settle).Add(o.ordMargin)) {
		return decimal.Zero, refuse(51008, "Order failed. Insufficient %s margin in account", settle)
	}
	o.ordMargin = decimal.Zero
	p := s.positions[key]
	if p == nil {
		p = &position{}
	}
	if reduce.IsPositive() {
		size := p.pos.Abs()
		pnl := price.Sub(p.avgPx).Mul(reduce).Mul(ctVal).Mul(decimal.NewFromInt(dir))
		share := p.margin
		if reduce.LessThan(size) {
			share = p.margin.Mul(reduce).Div(size)
		}
		cash.cash = cash.cash.Add(pnl)
		p.margin = p.margin.Sub(share)
		if p.pos.IsNegative() {
			p.pos = p.pos.Add(reduce)
		} else {
			p.pos = p.pos.Sub(reduce)
		}
		if p.pos.IsZero() {
			p = &position{}
		}
	}
	if open.IsPositive() {
		size := p.pos.Abs()
		p.avgPx = p.avgPx.Mul(size).Add(price.Mul(open)).Div(size.Add(open))
		if o.posSide == "net" && o.side == "sell" {
			p.pos = p.pos.Sub(open)
		} else {
			p.pos = p.pos.Add(open)
		}
		p.margin = p.margin.Add(im)
	}
	cash.cash = cash.cash.Sub(fee)
	if p.pos.IsZero() {
		delete(s.positions, key)
	} else {
		s.positions[key] = p
	}
	o.fee, o.feeCcy = fee.Neg(), settle
	return qty, nil
}

func (s *Server) getOrder(q map[string]string, _ []byte) (any, *failure) {
	if q["instId"] == "" {
		return nil, emptyParam("instId")
	}
	var o *order
	switch {
	case q["ordId"] != "":
		o = s.byOrdID[q["ordId"]]
	case q["clOrdId"] != "":
		o = s.latest(q["clOrdId"])
	default:
		return nil, fail(51003, "Either client order ID or order ID is required.")
	}
	if o == nil || o.instID != q["instId"] {
		return nil, fail(51603, "Order does not exist.")
	}
	return []map[string]any{o.json()}, nil
}

func (s *Server) cancelOrder(_ map[string]string, body []byte) (any, *failure) {
	var r struct {
		InstID  string `json:"instId"`
		OrdID   string `json:"ordId"`
		ClOrdID string `json:"clOrdId"`
	}
	if f := decode(body, &r); f != nil {
		return nil, f
	}
	if r.InstID == "" {
		return nil, emptyParam("instId")
	}
	ids := map[string]string{"clOrdId": r.ClOrdID, "ordId": r.OrdID}
	var o *order
	switch {
	case r.OrdID != "":
		o = s.byOrdID[r.OrdID]
	case r.ClOrdID != "":
		o = s.latest(r.ClOrdID)
	default:
		return nil, withIDs(refuse(51407, "Either order ID or client order ID is required."), ids)
	}
	if o == nil || o.instID != r.InstID || !o.pending() {
		return nil, withIDs(refuse(51400, "Order cancellation failed as the order has been filled, canceled or does not exist."), ids)
	}
	s.release(o)
	o.state, o.updated, o.cancelSource = "canceled", s.now().UnixMilli(), "1"
	return []map[string]string{{"clOrdId": o.clOrdID, "ordId": o.ordID, "ts": fmtMS(o.updated), "sCode": "0", "sMsg": ""}}, nil
}

// --- algo orders ---

type algoReq struct {
	InstID          string   `json:"instId"`
	TdMode          string   `json:"tdMode"`
	Side            string   `json:"side"`
	PosSide         string   `json:"posSide"`
	OrdType         string   `json:"ordType"`
	Sz              string   `json:"sz"`
	TgtCcy          string   `json:"tgtCcy"`
	AlgoClOrdID     string   `json:"algoClOrdId"`
	CloseFraction   string   `json:"closeFraction"`
	ReduceOnly      flexBool `json:"reduceOnly"`
	SlTriggerPx     string   `json:"slTriggerPx"`
	SlOrdPx         string   `json:"slOrdPx"`
	SlTriggerPxType string   `json:"slTriggerPxType"`
	TpTriggerPx     string   `json:"tpTriggerPx"`
	TpOrdPx         string   `json:"tpOrdPx"`
	TpTriggerPxType string   `json:"tpTriggerPxType"`
}

func (s *Server) placeAlgo(_ map[string]string, body []byte) (any, *failure) {
	var r algoReq
	if f := decode(body, &r); f != nil {
		return nil, f
	}
	ids := map[string]string{"algoClOrdId": r.AlgoClOrdID, "algoId": "", "clOrdId": ""}
	a, f := s.newAlgo(r)
	if f != nil {
		return nil, withIDs(f, ids)
	}
	s.algos = append(s.algos, a)
	if a.algoClOrdID != "" {
		s.created[a.algoClOrdID]++
	}
	return []map[string]string{{"algoId": a.algoID, "clOrdId": "", "algoClOrdId": a.algoClOrdID, "sCode": "0",
		"sMsg": "Order placed", "tag": ""}}, nil
}

// newAlgo validates a conditional algo order as OKX does and makes it.
func (s *Server) newAlgo(r algoReq) (*algo, *failure) {
	if f := required("instId", r.InstID, "tdMode", r.TdMode, "side", r.Side, "ordType", r.OrdType); f != nil {
		return nil, f
	}
	if r.OrdType != "conditional" {
		return nil, badParam("ordType")
	}
	if r.AlgoClOrdID != "" && !validClID.MatchString(r.AlgoClOrdID) {
		return nil, badParam("algoClOrdId")
	}
	in := s.instrument(r.InstID)
	if in == nil || in.state != "live" {
		return nil, refuse(51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if r.Side != "buy" && r.Side != "sell" {
		return nil, badParam("side")
	}
	if f := checkTdMode(in, r.TdMode); f != nil {
		return nil, f
	}
	if f := s.checkPosSide(in, r.PosSide); f != nil {
		return nil, f
	}
	spot := in.instType == "SPOT"
	if spot && bool(r.ReduceOnly) {
		return nil, refuse(51139, "Reduce-only feature is unavailable for the spot transactions by spot mode.")
	}
	if r.TgtCcy != "" && (r.TgtCcy != "base_ccy" && r.TgtCcy != "quote_ccy" || !spot) {
		return nil, badParam("tgtCcy")
	}
	if r.AlgoClOrdID != "" {
		for _, a := range s.algos {
			if a.algoClOrdID == r.AlgoClOrdID && a.state == "live" {
				return nil, refuse(51065, "algoClOrdId already exists.")
			}
		}
	}
	tick := decimal.RequireFromString(in.tickSz)
	last := s.price(in.instID)
	sell := r.Side == "sell"
	if r.SlTriggerPx == "" && r.TpTriggerPx == "" {
		return nil, fail(51175, "Parameters slTriggerPx tpTriggerPx and tpOrdPx cannot be empty at the same time")
	}
	for _, leg := range []struct{ trigger, ordPx, typ, name string }{
		{r.SlTriggerPx, r.SlOrdPx, r.SlTriggerPxType, "sl"}, {r.TpTriggerPx, r.TpOrdPx, r.TpTriggerPxType, "tp"},
	} {
		if leg.trigger == "" {
			if leg.ordPx != "" {
				return nil, emptyParam(leg.name + "TriggerPx")
			}
			continue
		}
		t, ok := dec(leg.trigger)
		if !ok || !t.IsPositive() || !multiple(t, tick) {
			return nil, badParam(leg.name + "TriggerPx")
		}
		if leg.ordPx == "" {
			return nil, emptyParam(leg.name + "OrdPx")
		}
		if leg.ordPx != "-1" {
			if p, ok := dec(leg.ordPx); !ok || !p.IsPositive() || !multiple(p, tick) {
				return nil, badParam(leg.name + "OrdPx")
			}
		}
		if leg.typ != "" && leg.typ != "last" && leg.typ != "index" && leg.typ != "mark" {
			return nil, badParam(leg.name + "TriggerPxType")
		}
		switch {
		case leg.name == "sl" && sell && !t.LessThan(last):
			return nil, refuse(51280, "SL trigger price cannot be higher than the last price.")
		case leg.name == "sl" && !sell && !t.GreaterThan(last):
			return nil, refuse(51278, "SL trigger price cannot be lower than the last price.")
		case leg.name == "tp" && sell && !t.GreaterThan(last):
			return nil, refuse(51279, "TP trigger price cannot be lower than the last price.")
		case leg.name == "tp" && !sell && !t.LessThan(last):
			return nil, refuse(51277, "TP trigger price cannot be higher than the last price.")
		}
	}
	now := s.now().UnixMilli()
	s.seq++
	a := &algo{algoID: strconv.FormatInt(1753184812254216192+int64(s.seq), 10), algoClOrdID: r.AlgoClOrdID,
		instID: in.instID, instType: in.instType, tdMode: r.TdMode, side: r.Side, posSide: r.PosSide, state: "live",
		tgtCcy: r.TgtCcy, reduceOnly: bool(r.ReduceOnly), slTrigger: r.SlTriggerPx, slOrdPx: r.SlOrdPx,
		slType: r.SlTriggerPxType, tpTrigger: r.TpTriggerPx, tpOrdPx: r.TpOrdPx, tpType: r.TpTriggerPxType,
		last: last, created: now, updated: now}
	if !spot && a.posSide == "" {
		a.posSide = "net"
	}
	if a.slTrigger != "" && a.slType == "" {
		a.slType = "last"
	}
	if a.tpTrigger != "" && a.tpType == "" {
		a.tpType = "last"
	}
	if r.CloseFraction != "" {
		switch {
		case r.CloseFraction != "1":
			return nil, badParam("closeFraction")
		case r.Sz != "":
			return nil, fail(50024, "Parameter sz and closeFraction can not exist at the same time.")
		case spot:
			return nil, refuse(51327, "closeFraction is only available for Expiry Futures and Perpetual Futures")
		case s.posMode == NetMode && !bool(r.ReduceOnly):
			return nil, refuse(51328, "closeFraction is only available for reduceOnly orders")
		case (r.SlOrdPx != "" && r.SlOrdPx != "-1") || (r.TpOrdPx != "" && r.TpOrdPx != "-1"):
			return nil, refuse(51330, "closeFraction is only available for stop market orders")
		case (a.posSide == "long" && !sell) || (a.posSide == "short" && sell):
			return nil, refuse(51331, "closeFraction is only available for close position orders")
		}
		for _, b := range s.algos {
			if b.state == "live" && b.closeFraction != "" && b.instID == a.instID && b.posSide == a.posSide {
				return nil, refuse(51088, "You can only place 1 TP/SL order to close an entire position")
			}
		}
		a.closeFraction = r.CloseFraction
		return a, nil
	}
	if r.Sz == "" {
		return nil, emptyParam("sz")
	}
	sz, ok := dec(r.Sz)
	if !ok || !sz.IsPositive() {
		return nil, badParam("sz")
	}
	if !multiple(sz, decimal.RequireFromString(in.lotSz)) {
		return nil, refuse(51121, "Order quantity must be a multiple of the lot size.")
	}
	if sz.LessThan(decimal.RequireFromString(in.minSz)) {
		return nil, refuse(51020, "Your order should meet or exceed the minimum order amount.")
	}
	a.sz, a.szText = sz, r.Sz
	return a, nil
}

func (s *Server) getAlgo(q map[string]string, _ []byte) (any, *failure) {
	if q["algoId"] == "" && q["algoClOrdId"] == "" {
		return nil, fail(50015, "Either parameter algoId or algoClOrdId is required")
	}
	for i := len(s.algos) - 1; i >= 0; i-- {
		a := s.algos[i]
		if (q["algoId"] != "" && a.algoID == q["algoId"]) || (q["algoId"] == "" && a.algoClOrdID == q["algoClOrdId"]) {
			return []map[string]any{a.json()}, nil
		}
	}
	return nil, fail(51603, "Order does not exist.")
}

func (s *Server) cancelAlgos(_ map[string]string, body []byte) (any, *failure) {
	var rs []struct {
		AlgoID string `json:"algoId"`
		InstID string `json:"instId"`
	}
	if f := decode(body, &rs); f != nil {
		return nil, f
	}
	if len(rs) == 0 || len(rs) > 10 {
		return nil, badParam("algoId")
	}
	out := []map[string]string{}
	for _, r := range rs {
		if r.AlgoID == "" || r.InstID == "" {
			return nil, emptyParam("algoId")
		}
		var hit *algo
		for _, a := range s.algos {
			if a.algoID == r.AlgoID && a.instID == r.InstID {
				hit = a
			}
		}
		if hit == nil || hit.state != "live" {
			return nil, withIDs(refuse(51400, "Order cancellation failed as the order has been filled, canceled or does not exist."),
				map[string]string{"algoId": r.AlgoID, "algoClOrdId": "", "clOrdId": ""})
		}
		hit.state, hit.updated = "canceled", s.now().UnixMilli()
		out = append(out, map[string]string{"algoId": hit.algoID, "algoClOrdId": "", "clOrdId": "", "sCode": "0", "sMsg": "", "tag": ""})
	}
	return out, nil
}

// --- account ---

func (s *Server) balance(q map[string]string, _ []byte) (any, *failure) {
	var want map[string]bool
	if q["ccy"] != "" {
		want = map[string]bool{}
		for _, c := range strings.Split(q["ccy"], ",") {
			want[c] = true
		}
	}
	details := []map[string]string{}
	total := decimal.Zero
	now := fmtMS(s.now().UnixMilli())
	for name, c := range s.coins {
		pm, om, upl := s.margins(name)
		eq := c.cash.Add(upl)
		if (want != nil && !want[name]) || (c.cash.IsZero() && eq.IsZero()) {
			continue
		}
		frozen := c.frozen.Add(pm).Add(om)
		total = total.Add(eq)
		details = append(details, map[string]string{"ccy": name, "eq": eq.String(), "cashBal": c.cash.String(),
			"uTime": now, "isoEq": "0", "availEq": c.cash.Sub(frozen).Add(upl).String(), "disEq": eq.String(),
			"fixedBal": "0", "availBal": c.cash.Sub(frozen).String(), "frozenBal": frozen.String(),
			"ordFrozen": c.frozen.Add(om).String(), "liab": "", "upl": upl.String(), "uplLiab": "", "crossLiab": "",
			"isoLiab": "", "mgnRatio": "", "interest": "", "twap": "0", "maxLoan": "", "eqUsd": eq.String(),
			"borrowFroz": "", "notionalLever": "", "stgyEq": "0", "isoUpl": "0", "spotInUseAmt": "",
			"spotIsoBal": "0", "imr": pm.Add(om).String(), "mmr": "", "spotBal": "", "openAvgPx": "", "accAvgPx": "",
			"spotUpl": "", "spotUplRatio": "", "totalPnl": "", "totalPnlRatio": ""})
	}
	return []map[string]any{{"uTime": now, "totalEq": total.String(), "isoEq": "0", "adjEq": "", "availEq": "",
		"ordFroz": "", "imr": "", "mmr": "", "borrowFroz": "", "mgnRatio": "", "notionalUsd": "", "upl": "",
		"details": details}}, nil
}

func (s *Server) positionsList(q map[string]string, _ []byte) (any, *failure) {
	if it := q["instType"]; it != "" && it != "SWAP" && it != "FUTURES" && it != "MARGIN" && it != "OPTION" {
		return nil, badParam("instType")
	}
	out := []map[string]string{}
	if q["instType"] != "" && q["instType"] != "SWAP" {
		return out, nil
	}
	now := fmtMS(s.now().UnixMilli())
	for key, p := range s.positions {
		instID, side, _ := strings.Cut(key, "|")
		if p.pos.IsZero() || (q["instId"] != "" && q["instId"] != instID) {
			continue
		}
		upl := s.price(instID).Sub(p.avgPx).Mul(p.pos).Mul(s.ctVal(instID))
		if side == "short" {
			upl = upl.Neg()
		}
		out = append(out, map[string]string{"instType": "SWAP", "instId": instID, "posSide": side,
			"pos": p.pos.String(), "availPos": p.pos.Abs().String(), "avgPx": p.avgPx.String(), "upl": upl.String(),
			"mgnMode": "cross", "lever": strconv.Itoa(s.lev(instID)), "margin": "", "imr": p.margin.String(),
			"last": s.price(instID).String(), "ccy": s.instrument(instID).settle, "posId": fmt.Sprintf("%x", key),
			"cTime": now, "uTime": now})
	}
	return out, nil
}

func (s *Server) setLeverage(_ map[string]string, body []byte) (any, *failure) {
	var r struct {
		InstID  string `json:"instId"`
		Lever   string `json:"lever"`
		MgnMode string `json:"mgnMode"`
		PosSide string `json:"posSide"`
	}
	if f := decode(body, &r); f != nil {
		return nil, f
	}
	if f := required("lever", r.Lever, "mgnMode", r.MgnMode); f != nil {
		return nil, f
	}
	if r.MgnMode != "cross" && r.MgnMode != "isolated" {
		return nil, badParam("mgnMode")
	}
	in := s.instrument(r.InstID)
	if in == nil || in.instType != "SWAP" || in.state != "live" {
		return nil, fail(51001, "Instrument ID or Spread ID doesn't exist.")
	}
	if r.MgnMode == "isolated" && s.posMode == LongShortMode && r.PosSide != "long" && r.PosSide != "short" {
		return nil, badParam("posSide")
	}
	l, err := strconv.Atoi(r.Lever)
	if max, _ := strconv.Atoi(in.lever); err != nil || l < 1 || l > max {
		return nil, badParam("lever")
	}
	s.leverage[r.InstID] = l
	return []map[string]string{{"lever": r.Lever, "mgnMode": r.MgnMode, "instId": r.InstID, "posSide": r.PosSide}}, nil
}
