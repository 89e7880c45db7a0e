package okx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// oOrder is an order of GET /api/v5/trade/order.
type oOrder struct {
	InstID     string `json:"instId"`
	OrdID      string `json:"ordId"`
	ClOrdID    string `json:"clOrdId"`
	Side       string `json:"side"`
	PosSide    string `json:"posSide"`
	OrdType    string `json:"ordType"`
	State      string `json:"state"`
	TgtCcy     string `json:"tgtCcy"`
	Sz         num    `json:"sz"`
	Px         num    `json:"px"`
	AccFillSz  num    `json:"accFillSz"`
	AvgPx      num    `json:"avgPx"`
	Fee        num    `json:"fee"`
	FeeCcy     string `json:"feeCcy"`
	ReduceOnly string `json:"reduceOnly"`
	CTime      num    `json:"cTime"`
	UTime      num    `json:"uTime"`
}

// placeBody is the JSON body of POST /api/v5/trade/order. Sizes and prices are the exact
// decimal strings of the request.
type placeBody struct {
	InstID     string `json:"instId"`
	TdMode     string `json:"tdMode"`
	ClOrdID    string `json:"clOrdId"`
	Side       string `json:"side"`
	PosSide    string `json:"posSide,omitempty"`
	OrdType    string `json:"ordType"`
	Sz         string `json:"sz"`
	Px         string `json:"px,omitempty"`
	TgtCcy     string `json:"tgtCcy,omitempty"`
	BanAmend   bool   `json:"banAmend,omitempty"`
	ReduceOnly bool   `json:"reduceOnly,omitempty"`
}

// ClOrdID is the clOrdId (and algoClOrdId) of a client order ID. OKX takes 1 to 32
// case-sensitive letters and digits, which the executor's IDs ("sg-" and 32 hex digits) are
// not. The mapping is deterministic, so that the same ID always names the same order:
//
//   - "sg-" + 32 hex digits → "sg" + the first 30 of them (32 characters). Two executor IDs
//     share a clOrdId only when their first 120 bits agree; as the IDs are SHA-256 digests,
//     the chance that any two of n orders collide is below n²/2¹²¹ (about 4·10⁻¹⁹ for a
//     billion orders).
//   - another ID of 1 to 31 letters and digits → itself (shorter than both 32-character
//     forms, so it can collide with neither);
//   - anything else → "h" + 31 hex digits of its SHA-256 (124 bits).
//
// OKX echoes the clOrdId, not the caller's ID: orders read back carry the caller's
// ClientOrderID, which every call has.
func ClOrdID(clientOrderID string) string {
	if h, ok := strings.CutPrefix(clientOrderID, "sg-"); ok && len(h) == 32 && isHex(h) {
		return "sg" + h[:30]
	}
	if n := len(clientOrderID); n >= 1 && n <= 31 && alnum(clientOrderID) {
		return clientOrderID
	}
	sum := sha256.Sum256([]byte(clientOrderID))
	return "h" + hex.EncodeToString(sum[:])[:31]
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func alnum(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func conditional(t exchange.OrderType) bool {
	return t == exchange.StopLoss || t == exchange.TakeProfit
}

// validate is exchange.OrderRequest.Validate plus this adapter's own rule: a futures
// stop_loss or take_profit without an amount is sent with closeFraction=1, which OKX takes
// only for an order executed at the market price, so one with a limit price is refused here
// rather than sent for a size nobody asked for (exchange.OrderRequest.Validate may refuse it
// already).
func validate(req exchange.OrderRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Kind == exchange.Futures && conditional(req.Type) && req.Amount.IsZero() && req.Price.IsPositive() {
		return errs.New(errs.InvalidAmount, "a %s at a limit price needs an amount: okx closes a whole position only at the market price", req.Type)
	}
	return nil
}

func sideOf(s exchange.Side) string {
	if s == exchange.SideSell {
		return "sell"
	}
	return "buy"
}

// posSide is the position an order acts on in long/short mode.
func posSide(req exchange.OrderRequest) string {
	if req.HedgeLong() {
		return "long"
	}
	return "short"
}

// orderBody builds the body of POST /api/v5/trade/order and returns it with its sz:
//
//   - market (ordType market) and limit (ordType limit, GTC, px) orders;
//   - spot: tdMode cash; a market order has tgtCcy=base_ccy, so that sz is the base amount
//     (OKX's default for a market buy is the quote amount), and banAmend=true, so that OKX
//     refuses a market order the balance cannot cover rather than shrinking it;
//   - swaps: tdMode cross, sz in contracts (market.size); in net mode no posSide and
//     reduceOnly when asked; in long/short mode posSide long or short
//     (exchange.OrderRequest.HedgeLong), and no reduceOnly, which OKX takes in net mode
//     only: there an exit is a sell on the long side or a buy on the short side.
func orderBody(m *market, req exchange.OrderRequest, id string, mode exchange.PositionMode) ([]byte, string, error) {
	sz, err := m.size(req.Amount)
	if err != nil {
		return nil, "", err
	}
	b := placeBody{InstID: m.raw, TdMode: "cash", ClOrdID: id, Side: sideOf(req.Side), OrdType: "market", Sz: sz}
	if req.Type == exchange.Limit {
		b.OrdType, b.Px = "limit", req.Price.String()
	}
	if m.swap() {
		b.TdMode = "cross"
		if mode == exchange.Hedge {
			b.PosSide = posSide(req)
		} else {
			b.ReduceOnly = req.ReduceOnly
		}
	} else if b.OrdType == "market" {
		b.TgtCcy, b.BanAmend = "base_ccy", true
	}
	data, err := json.Marshal(b)
	return data, sz, err
}

// PlaceOrder implements exchange.Exchange through POST /api/v5/trade/order (market and
// limit) or POST /api/v5/trade/order-algo (stop_loss and take_profit, see placeAlgo), with
// clOrdId = ClOrdID(ClientOrderID), and never makes two orders of one ClientOrderID:
//
//   - the order is looked up first (GET /api/v5/trade/order by clOrdId): OKX refuses a
//     clOrdId only while an order holding it is pending, so an order that already filled
//     would not stop a second one. A found order is returned instead of placing;
//   - a duplicate clOrdId answer (51016) returns the order that has it;
//   - the request carries expTime (Expiry after its send, on OKX's clock): OKX refuses it
//     unprocessed after that;
//   - when the placement gets no answer, a 5xx or a back-end time-out, the order is looked
//     up; when it is not found the error is ErrOrderUnconfirmed (untyped, see there) and the
//     order is not sent again: inside the request window (RequestWindowFor) it may still
//     land;
//   - an order OKX refused is the spec's typed error (INSUFFICIENT_BALANCE with asset,
//     available and, when it can be estimated, required; INVALID_AMOUNT, INVALID_PRICE,
//     INVALID_SYMBOL, RATE_LIMITED, EXCHANGE_ERROR with OKX's message and code). A refused
//     posSide (51000 "Parameter posSide error") means the account's position mode changed
//     since it was read: the mode is read again for the next order, and this one is not
//     sent again in the other mode.
//
// Swap orders need the account's position mode (positionMode: read before the first swap
// order, again after ModeTTL). A swap entry with Leverage ≥ 1 first sets the instrument's
// leverage (OKX keeps leverage per instrument and margin mode, not per order). The order is
// read back after the placement; a market order is polled briefly until OKX reports it
// finished.
func (a *Account) PlaceOrder(ctx context.Context, req exchange.OrderRequest) (exchange.Order, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	if err := validate(req); err != nil {
		return exchange.Order{}, err
	}
	m, err := a.market(ctx, req.Kind, req.Symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	id := ClOrdID(req.ClientOrderID)
	var mode exchange.PositionMode
	if m.swap() {
		if mode, err = a.positionMode(ctx); err != nil {
			return exchange.Order{}, err
		}
	}
	if conditional(req.Type) {
		return a.placeAlgo(ctx, m, req, id, mode)
	}
	body, sz, err := orderBody(m, req, id, mode)
	if err != nil {
		return exchange.Order{}, err
	}
	c := a.client(req.Kind)
	o, found, err := a.lookup(ctx, m, id)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	if found {
		return a.existing(ctx, m, req, sz, o)
	}
	if m.swap() && !req.Exits() && req.Leverage >= 1 {
		if err := a.ensureLeverage(ctx, m, req.Leverage); err != nil {
			return exchange.Order{}, err
		}
	}
	return a.create(ctx, m, req, id, sz, body)
}

// createReserve is the share of the budget a placement leaves for looking the order up
// when it gets no answer.
func (a *Account) createReserve() time.Duration { return a.timeout / 4 }

// noTime is a placement that was not sent: the call's budget was spent before it.
func noTime(ctx context.Context) error {
	return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, context.DeadlineExceeded), errs.ExchangeError,
		"okx: no time was left in the call's budget to place the order (it was not sent)")
}

func (a *Account) create(ctx context.Context, m *market, req exchange.OrderRequest, id, sz string, body []byte) (exchange.Order, error) {
	c := a.client(req.Kind)
	capacity := min(restkit.Remaining(ctx)-a.createReserve(), a.timeout/2)
	if capacity < 50*time.Millisecond {
		return exchange.Order{}, noTime(ctx)
	}
	var ack []struct {
		OrdID string `json:"ordId"`
	}
	err := c.call(ctx, request{method: http.MethodPost, path: "/api/v5/trade/order", body: body, private: true, expiry: a.expiry}, false, capacity, &ack)
	if err == nil {
		ordID := ""
		if len(ack) > 0 {
			ordID = ack[0].OrdID
		}
		return a.confirm(ctx, m, req, id, ordID), nil
	}
	switch classOf(err) {
	case classDuplicate:
		o, found, lerr := a.lookup(ctx, m, id)
		if lerr != nil || !found {
			if lerr == nil {
				lerr = err
			}
			return exchange.Order{}, fmt.Errorf("%w (client order ID %s exists but cannot be read): %w: %w", ErrOrderUnconfirmed, req.ClientOrderID, exchange.ErrUnreachable, lerr)
		}
		return a.existing(ctx, m, req, sz, o)
	case classMode:
		a.dropMode()
		return exchange.Order{}, c.typed(err, "place order")
	}
	if !transient(err) {
		return exchange.Order{}, a.refused(ctx, m, req, c.typed(err, "place order"))
	}
	// OKX may have taken it: look, and never send it again inside the window.
	for i := 0; ; i++ {
		o, found, lerr := a.lookup(ctx, m, id)
		if lerr == nil && found {
			return a.settle(ctx, m, req, id, o), nil
		}
		if lerr != nil {
			err = fmt.Errorf("%w; looking the order up: %w", err, lerr)
			break
		}
		if i == 2 || restkit.Remaining(ctx) < 150*time.Millisecond || !exchange.Sleep(ctx, 50*time.Millisecond<<i, 100*time.Millisecond) {
			break
		}
	}
	return exchange.Order{}, fmt.Errorf("%w (client order ID %s): %w: %w", ErrOrderUnconfirmed, req.ClientOrderID, exchange.ErrUnreachable, err)
}

// confirm reads an acknowledged order back; if it cannot be read, it is reported pending.
func (a *Account) confirm(ctx context.Context, m *market, req exchange.OrderRequest, id, ordID string) exchange.Order {
	for i := 0; i < 3; i++ {
		o, found, err := a.lookup(ctx, m, id)
		if err != nil {
			break
		}
		if found {
			return a.settle(ctx, m, req, id, o)
		}
		if restkit.Remaining(ctx) < 150*time.Millisecond || !exchange.Sleep(ctx, 25*time.Millisecond<<i, 0) {
			break
		}
	}
	now := time.Now().UnixMilli()
	return exchange.Order{ID: ordID, ClientOrderID: req.ClientOrderID, Symbol: m.info.Symbol, Kind: req.Kind,
		Side: req.Side, Type: req.Type, Status: exchange.StatusPending, Amount: req.Amount,
		FeeAsset: defaultFeeAsset(m), CreatedAt: now, UpdatedAt: now}
}

// settle polls a market order briefly until OKX reports it finished.
func (a *Account) settle(ctx context.Context, m *market, req exchange.OrderRequest, id string, o oOrder) exchange.Order {
	wait := 25 * time.Millisecond
	for i := 0; i < 6 && req.Type == exchange.Market && !statusOf(o.State).Terminal(); i++ {
		if !exchange.Sleep(ctx, wait, 200*time.Millisecond) {
			break
		}
		wait *= 2
		next, found, err := a.lookup(ctx, m, id)
		if err != nil || !found {
			break
		}
		o = next
	}
	return toOrder(m, req.Type, req.ClientOrderID, o)
}

// existing answers a request whose clOrdId an order already has. An order that is not this
// request's (other side or size) means the ID is taken: this request was not placed.
func (a *Account) existing(ctx context.Context, m *market, req exchange.OrderRequest, sz string, o oOrder) (exchange.Order, error) {
	want, _ := decimal.NewFromString(sz)
	if o.Side != sideOf(req.Side) || !o.Sz.Dec().Equal(want) {
		return exchange.Order{}, errs.New(errs.ExchangeError, "client order ID %s is already used by another okx order", req.ClientOrderID)
	}
	return a.settle(ctx, m, req, ClOrdID(req.ClientOrderID), o), nil
}

// refused completes a typed refusal: INSUFFICIENT_BALANCE gets its details.
func (a *Account) refused(ctx context.Context, m *market, req exchange.OrderRequest, err error) error {
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InsufficientBalance {
		return err
	}
	spotSell := !m.swap() && req.Side == exchange.SideSell
	asset := m.settle
	if !m.swap() {
		asset = m.info.Quote
		if spotSell {
			asset = m.info.Base
		}
	}
	var required, available *decimal.Decimal
	if b, berr := a.balance(ctx, asset); berr == nil {
		available = &b.Free
	}
	price := req.Price
	if !price.IsPositive() {
		price = req.StopPrice
	}
	if !price.IsPositive() && !spotSell {
		if p, perr := a.ticker(ctx, m); perr == nil {
			price = p
		}
	}
	switch {
	case spotSell:
		required = &req.Amount
	case price.IsPositive() && req.Amount.IsPositive():
		r := req.Amount.Mul(price)
		if m.swap() && req.Leverage > 1 {
			r = r.Div(decimal.NewFromInt(int64(req.Leverage))).RoundUp(8)
		}
		required = &r
	}
	restkit.Shortfall(e, asset, required, available, fmt.Sprintf("okx code %d", codeOf(err)))
	return e
}

// lookup finds an order by clOrdId (GET /api/v5/trade/order, which answers the latest order
// holding it). OKX keeps cancelled orders without fills there for a limited time (2 hours
// in its documentation): after that such an order reads as not found.
func (a *Account) lookup(ctx context.Context, m *market, id string) (oOrder, bool, error) {
	return a.readOrder(ctx, m, url.Values{"instId": {m.raw}, "clOrdId": {id}}, func(o oOrder) bool { return o.ClOrdID == id })
}

// lookupByID finds an order by ordId (an algo order's child).
func (a *Account) lookupByID(ctx context.Context, m *market, ordID string) (oOrder, bool, error) {
	return a.readOrder(ctx, m, url.Values{"instId": {m.raw}, "ordId": {ordID}}, func(o oOrder) bool { return o.OrdID == ordID })
}

func (a *Account) readOrder(ctx context.Context, m *market, q url.Values, match func(oOrder) bool) (oOrder, bool, error) {
	c := a.client(m.info.Kind)
	var res []oOrder
	err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/trade/order", query: q.Encode(), private: true}, true, 0, &res)
	if classOf(err) == classNotFound {
		return oOrder{}, false, nil
	}
	if err != nil {
		return oOrder{}, false, err
	}
	for _, o := range res {
		if match(o) && (o.InstID == "" || o.InstID == m.raw) {
			return o, true, nil
		}
	}
	return oOrder{}, false, nil
}

// GetOrder implements exchange.Exchange: the order by clOrdId, else the algo order by
// algoClOrdId (stop_loss and take_profit); an unknown order is exchange.ErrOrderNotFound.
func (a *Account) GetOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	m, err := a.marketLenient(ctx, kind, symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	c := a.client(kind)
	id := ClOrdID(clientOrderID)
	o, found, err := a.lookup(ctx, m, id)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	if found {
		return toOrder(m, "", clientOrderID, o), nil
	}
	ao, found, err := a.lookupAlgo(ctx, m, id)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get algo order")
	}
	if !found {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	out, err := a.algoToOrder(ctx, m, "", clientOrderID, ao)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	return out, nil
}

// CancelOrder implements exchange.Exchange: POST /api/v5/trade/cancel-order by clOrdId, or
// POST /api/v5/trade/cancel-algos by algoId for a stop_loss or take_profit. A finished order
// is returned with EXCHANGE_ERROR; an unknown one is ErrOrderNotFound.
func (a *Account) CancelOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c := a.client(kind)
	m, err := a.marketLenient(ctx, kind, symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	id := ClOrdID(clientOrderID)
	o, found, err := a.lookup(ctx, m, id)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	if !found {
		return a.cancelAlgo(ctx, m, clientOrderID, id)
	}
	if st := statusOf(o.State); st.Terminal() {
		return toOrder(m, "", clientOrderID, o), errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, st)
	}
	body, err := json.Marshal(struct {
		InstID  string `json:"instId"`
		ClOrdID string `json:"clOrdId"`
	}{m.raw, id})
	if err != nil {
		return exchange.Order{}, err
	}
	// Cancelling twice is harmless: retried like a read.
	cerr := c.call(ctx, request{method: http.MethodPost, path: "/api/v5/trade/cancel-order", body: body, private: true}, true, 0, nil)
	if cerr != nil && classOf(cerr) != classGone {
		return toOrder(m, "", clientOrderID, o), c.typed(cerr, "cancel order")
	}
	after, found, err := a.lookup(ctx, m, id)
	if err != nil || !found {
		if err == nil {
			err = &apiError{status: http.StatusOK, msg: "the cancelled order cannot be read back"}
		}
		return toOrder(m, "", clientOrderID, o), c.typed(err, "get order")
	}
	out := toOrder(m, "", clientOrderID, after)
	if out.Status != exchange.StatusCancelled {
		return out, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, out.Status)
	}
	return out, nil
}

// statusOf maps OKX's order state
// (https://www.okx.com/docs-v5/en/#order-book-trading-trade-get-order-details) to the spec's
// statuses (decision 10 in docs/decisions.md):
//
//	live                      open
//	partially_filled          partially_filled
//	filled                    filled
//	canceled, mmp_canceled    cancelled (FilledAmount keeps any fill)
//
// An unknown value is pending: not terminal, so it is read again.
func statusOf(s string) exchange.OrderStatus {
	switch s {
	case "live":
		return exchange.StatusOpen
	case "partially_filled":
		return exchange.StatusPartiallyFilled
	case "filled":
		return exchange.StatusFilled
	case "canceled", "mmp_canceled":
		return exchange.StatusCancelled
	}
	return exchange.StatusPending
}

// typeOf reads an order's type from its ordType.
func typeOf(ordType string) exchange.OrderType {
	switch ordType {
	case "market", "optimal_limit_ioc":
		return exchange.Market
	}
	return exchange.Limit
}

// defaultFeeAsset is where a fee is reported when OKX names none: the quote on spot, the
// settlement currency on swaps.
func defaultFeeAsset(m *market) string {
	if m.swap() {
		return m.settle
	}
	return m.info.Quote
}

// feeOf is sigops' fee of OKX's fee and feeCcy: OKX reports a charge as a negative amount
// (and, on swaps, a net rebate as a positive one), sigops a charge as a positive one. The
// fee stays in the currency OKX charged it in, as the other adapters report it: a spot
// buy's fee in the base currency (OKX's rule) tells the executor that the account holds
// FilledAmount less that fee, which it books as the position (and values the fee at the
// fill price for PnL).
func feeOf(m *market, okxFee decimal.Decimal, ccy string) (decimal.Decimal, string) {
	fee := okxFee.Neg()
	if ccy == "" {
		return fee, defaultFeeAsset(m)
	}
	return fee, strings.ToUpper(ccy)
}

// toOrder maps an OKX order. typ is the request's type when known; otherwise it is read
// from the order. Sizes come back in base units (contracts × ctVal on swaps).
func toOrder(m *market, typ exchange.OrderType, clientOrderID string, o oOrder) exchange.Order {
	side := exchange.SideBuy
	if o.Side == "sell" {
		side = exchange.SideSell
	}
	if typ == "" {
		typ = typeOf(o.OrdType)
	}
	filled := m.base(o.AccFillSz.Dec())
	amount := m.base(o.Sz.Dec())
	if !m.swap() && o.OrdType == "market" && o.TgtCcy == "quote_ccy" {
		amount = filled // sz is a quote amount: the base amount is what filled
	}
	avg := o.AvgPx.Dec()
	fee, asset := feeOf(m, o.Fee.Dec(), o.FeeCcy)
	created, _ := strconv.ParseInt(string(o.CTime), 10, 64)
	updated, _ := strconv.ParseInt(string(o.UTime), 10, 64)
	return exchange.Order{
		ID: o.OrdID, ClientOrderID: clientOrderID, Symbol: m.info.Symbol, Kind: m.info.Kind,
		Side: side, Type: typ, Status: statusOf(o.State), Amount: amount, FilledAmount: filled,
		AvgPrice: avg, Fee: fee, FeeAsset: asset, CreatedAt: created, UpdatedAt: updated,
	}
}
