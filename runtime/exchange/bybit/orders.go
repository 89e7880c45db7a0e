package bybit

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

// bOrder is an order of /v5/order/realtime and /v5/order/history.
type bOrder struct {
	OrderID       string `json:"orderId"`
	OrderLinkID   string `json:"orderLinkId"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"`
	OrderType     string `json:"orderType"`
	OrderStatus   string `json:"orderStatus"`
	StopOrderType string `json:"stopOrderType"`
	Price         num    `json:"price"`
	Qty           num    `json:"qty"`
	AvgPrice      num    `json:"avgPrice"`
	CumExecQty    num    `json:"cumExecQty"`
	CumExecFee    num    `json:"cumExecFee"`
	// CumFeeDetail is the fee per coin; nil when the answer has none (see feeOf).
	CumFeeDetail       map[string]num `json:"cumFeeDetail"`
	TriggerPrice       num            `json:"triggerPrice"`
	TriggerDirection   int            `json:"triggerDirection"`
	LastPriceOnCreated num            `json:"lastPriceOnCreated"` // not on spot
	BasePrice          num            `json:"basePrice"`          // spot only
	PositionIdx        int            `json:"positionIdx"`
	ReduceOnly         bool           `json:"reduceOnly"`
	CreatedTime        num            `json:"createdTime"`
	UpdatedTime        num            `json:"updatedTime"`
}

// createBody is the JSON body of /v5/order/create. Quantities and prices are the exact
// decimal strings of the request.
type createBody struct {
	Category         string `json:"category"`
	Symbol           string `json:"symbol"`
	Side             string `json:"side"`
	OrderType        string `json:"orderType"`
	Qty              string `json:"qty"`
	MarketUnit       string `json:"marketUnit,omitempty"`
	Price            string `json:"price,omitempty"`
	TimeInForce      string `json:"timeInForce,omitempty"`
	TriggerPrice     string `json:"triggerPrice,omitempty"`
	TriggerDirection int    `json:"triggerDirection,omitempty"`
	TriggerBy        string `json:"triggerBy,omitempty"`
	OrderFilter      string `json:"orderFilter,omitempty"`
	PositionIdx      *int   `json:"positionIdx,omitempty"`
	OrderLinkID      string `json:"orderLinkId"`
	ReduceOnly       *bool  `json:"reduceOnly,omitempty"`
	CloseOnTrigger   *bool  `json:"closeOnTrigger,omitempty"`
}

// LinkID is the orderLinkId of a client order ID. Bybit takes at most 36 characters of
// [A-Za-z0-9_-]; the executor's IDs ("sg-" and 32 hex digits) are used as they are, and any
// other ID is replaced by "x-" and 32 hex digits of its SHA-256, so that the same ID always
// names the same order.
func LinkID(clientOrderID string) string {
	if validLinkID(clientOrderID) {
		return clientOrderID
	}
	sum := sha256.Sum256([]byte(clientOrderID))
	return "x-" + hex.EncodeToString(sum[:])[:32]
}

func validLinkID(s string) bool {
	if s == "" || len(s) > 36 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// validate is exchange.OrderRequest.Validate plus this adapter's own rule: every order
// needs an amount. The adapter always sends the amount as Bybit's qty and has no
// whole-position close, so a stop_loss or take_profit meant to close the whole position
// (exchange.OrderRequest.ClosesPosition) is refused rather than placed for a size nobody
// asked for.
func validate(req exchange.OrderRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.ClosesPosition() {
		return errs.New(errs.InvalidAmount, "amount %s is not positive", req.Amount)
	}
	return nil
}

func conditional(t exchange.OrderType) bool {
	return t == exchange.StopLoss || t == exchange.TakeProfit
}

// bodyOf builds the order/create body:
//
//   - market and limit orders: orderType Market or Limit (GTC); on spot a Market order has
//     marketUnit=baseCoin, so that qty is the base amount (Bybit's default for a spot market
//     buy is the quote amount);
//   - stop_loss and take_profit: a conditional order on triggerPrice = StopPrice, Market
//     (Limit when Price is set). On spot: orderFilter=StopOrder. On linear: triggerDirection
//     (a stop-loss sell and a take-profit buy trigger when the price falls, 2; the other two
//     when it rises, 1), triggerBy LastPrice, reduceOnly and closeOnTrigger, whatever the
//     request's ReduceOnly: an exit never opens a position;
//   - linear: positionIdx by the symbol's position mode: 0 in one-way mode; in hedge mode 1
//     for the long side and 2 for the short (exchange.OrderRequest.HedgeLong: buying to
//     open or selling to exit is the long). reduceOnly on every exit (req.Exits) in both
//     modes: Bybit takes it with positionIdx 1 or 2, and its create-order page wants it
//     set on any order that closes or reduces a position.
func bodyOf(m *market, req exchange.OrderRequest, link string, mode exchange.PositionMode) ([]byte, error) {
	side := "Buy"
	if req.Side == exchange.SideSell {
		side = "Sell"
	}
	yes := true
	b := createBody{Category: m.category, Symbol: m.raw, Side: side, OrderType: "Market",
		Qty: req.Amount.String(), OrderLinkID: link}
	if req.Type == exchange.Limit || (conditional(req.Type) && req.Price.IsPositive()) {
		b.OrderType, b.Price, b.TimeInForce = "Limit", req.Price.String(), "GTC"
	}
	linear := m.category == "linear"
	if conditional(req.Type) {
		b.TriggerPrice = req.StopPrice.String()
		if linear {
			falls := (req.Type == exchange.StopLoss) == (req.Side == exchange.SideSell)
			b.TriggerDirection = 1
			if falls {
				b.TriggerDirection = 2
			}
			b.TriggerBy = "LastPrice"
			b.ReduceOnly, b.CloseOnTrigger = &yes, &yes
		} else {
			b.OrderFilter = "StopOrder"
		}
	}
	if linear {
		idx := 0
		if mode == exchange.Hedge {
			idx = 2
			if req.HedgeLong() {
				idx = 1
			}
		}
		b.PositionIdx = &idx
		if req.Exits() {
			b.ReduceOnly = &yes
		}
	} else if b.OrderType == "Market" {
		b.MarketUnit = "baseCoin"
	}
	return json.Marshal(b)
}

// PlaceOrder implements exchange.Exchange through POST /v5/order/create with
// orderLinkId = LinkID(ClientOrderID), and never makes two orders of one ClientOrderID:
//
//   - a duplicate orderLinkId (110072, spot 170141) returns the order that has it;
//   - when the create gets no answer, a 5xx or a back-end time-out, the order is looked up
//     (/v5/order/realtime, then /v5/order/history) before the create is sent again, at most
//     3 attempts in the call's budget; when it stays unknown the error is
//     ErrOrderUnconfirmed (untyped, see there);
//   - an order Bybit refused is the spec's typed error (INSUFFICIENT_BALANCE with asset,
//     available and, when it can be estimated, required; INVALID_AMOUNT, INVALID_PRICE,
//     INVALID_SYMBOL, RATE_LIMITED with RetryAfter, EXCHANGE_ERROR with Bybit's message).
//
// A linear order is built for its symbol's position mode (positionIdx, see symbolMode); an
// order Bybit refuses for its positionIdx is EXCHANGE_ERROR, the mode is read again for the
// next order, and it is not sent again in the other mode. A futures entry with Leverage ≥ 1
// first sets the symbol's leverage (Bybit keeps leverage per symbol, not per order). The
// order is read back after the create; a market order is polled briefly until Bybit reports
// it finished. Take-profit and stop-loss prices attached to an entry (order/create's
// takeProfit/stopLoss) are not used: exchange.OrderRequest does not carry them, and the
// executor's price watcher closes positions itself, so exchange-side exits would race with
// it. Exits on the exchange are the stop_loss and take_profit order types.
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
	link := LinkID(req.ClientOrderID)
	mode := exchange.OneWay
	if req.Kind == exchange.Futures {
		if mode, err = a.symbolMode(ctx, m); err != nil {
			// A repeated request whose order exists needs no mode.
			if o, found, lerr := a.lookup(ctx, m, link); lerr == nil && found {
				return a.settle(ctx, m, req, o), nil
			}
			return exchange.Order{}, err
		}
	}
	body, err := bodyOf(m, req, link, mode)
	if err != nil {
		return exchange.Order{}, err
	}
	if req.Kind == exchange.Futures && !req.ReduceOnly && !conditional(req.Type) && req.Leverage >= 1 {
		if err := a.setLeverage(ctx, m, req.Leverage); err != nil {
			// A repeated request whose order exists needs no leverage.
			if o, found, lerr := a.lookup(ctx, m, link); lerr == nil && found {
				return a.settle(ctx, m, req, o), nil
			}
			return exchange.Order{}, err
		}
	}
	return a.create(ctx, m, req, link, body)
}

// createReserve is the share of the budget a create attempt leaves for looking the order up
// when it gets no answer.
func (a *Account) createReserve() time.Duration { return a.timeout / 4 }

func (a *Account) create(ctx context.Context, m *market, req exchange.OrderRequest, link string, body []byte) (exchange.Order, error) {
	c := a.client(req.Kind)
	var last error
	for attempt := 0; attempt < restkit.MaxAttempts; attempt++ {
		capacity := min(restkit.Remaining(ctx)-a.createReserve(), a.timeout/2)
		if capacity < 50*time.Millisecond {
			break
		}
		var ack struct {
			OrderID string `json:"orderId"`
		}
		err := c.call(ctx, request{method: http.MethodPost, path: "/v5/order/create", body: body, private: true}, false, capacity, &ack)
		if err == nil {
			return a.confirm(ctx, m, req, link, ack.OrderID), nil
		}
		last = err
		if classOf(err) == classDuplicate {
			return a.existing(ctx, m, req, link, err)
		}
		if modeMismatch(err) {
			// The mode this order was built for is no longer the symbol's: forget what
			// was read and refuse. Sending it again with the other positionIdx inside
			// this call would act on a position the caller did not size this order for.
			a.modes.forget()
			return exchange.Order{}, refusedForMode(err, body, m)
		}
		if !transient(err) {
			return exchange.Order{}, a.refused(ctx, m, req, c.typed(err, "place order"))
		}
		// Bybit may have taken it: look before sending it again.
		o, found, lerr := a.lookup(ctx, m, link)
		if lerr != nil {
			last = fmt.Errorf("%w; looking the order up: %w", err, lerr)
			break
		}
		if found {
			return a.settle(ctx, m, req, o), nil
		}
		wait := restkit.Backoff(attempt)
		if !exchange.Sleep(ctx, wait, a.createReserve()+50*time.Millisecond) {
			break
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return exchange.Order{}, fmt.Errorf("%w (client order ID %s): %w: %w", ErrOrderUnconfirmed, req.ClientOrderID, exchange.ErrUnreachable, last)
}

// confirm reads an acknowledged order back; if it cannot be read, it is reported pending.
func (a *Account) confirm(ctx context.Context, m *market, req exchange.OrderRequest, link, orderID string) exchange.Order {
	for i := 0; i < 3; i++ {
		o, found, err := a.lookup(ctx, m, link)
		if err != nil {
			break
		}
		if found {
			return a.settle(ctx, m, req, o)
		}
		if restkit.Remaining(ctx) < 150*time.Millisecond || !exchange.Sleep(ctx, 25*time.Millisecond<<i, 0) {
			break
		}
	}
	now := time.Now().UnixMilli()
	return exchange.Order{ID: orderID, ClientOrderID: req.ClientOrderID, Symbol: m.info.Symbol, Kind: req.Kind,
		Side: req.Side, Type: req.Type, Status: exchange.StatusPending, Amount: req.Amount,
		CreatedAt: now, UpdatedAt: now}
}

// settle polls a market order briefly until Bybit reports it finished.
func (a *Account) settle(ctx context.Context, m *market, req exchange.OrderRequest, o bOrder) exchange.Order {
	wait := 25 * time.Millisecond
	for i := 0; i < 6 && req.Type == exchange.Market && !statusOf(o.OrderStatus).Terminal(); i++ {
		if !exchange.Sleep(ctx, wait, 200*time.Millisecond) {
			break
		}
		wait *= 2
		next, found, err := a.lookup(ctx, m, o.OrderLinkID)
		if err != nil || !found {
			break
		}
		o = next
	}
	return toOrder(m, req.Type, req.ClientOrderID, o)
}

// existing answers a duplicate orderLinkId with the order that has it. An order that is not
// this request's (other symbol, side or quantity) means the ID is taken: this request was
// not placed.
func (a *Account) existing(ctx context.Context, m *market, req exchange.OrderRequest, link string, dup error) (exchange.Order, error) {
	o, found, err := a.lookup(ctx, m, link)
	if err != nil || !found {
		if err == nil {
			err = dup
		}
		return exchange.Order{}, fmt.Errorf("%w (client order ID %s exists but cannot be read): %w: %w", ErrOrderUnconfirmed, req.ClientOrderID, exchange.ErrUnreachable, err)
	}
	want := "Buy"
	if req.Side == exchange.SideSell {
		want = "Sell"
	}
	if o.Side != want || !o.Qty.Dec().Equal(req.Amount) {
		return exchange.Order{}, errs.New(errs.ExchangeError, "client order ID %s is already used by another bybit order", req.ClientOrderID)
	}
	return a.settle(ctx, m, req, o), nil
}

// refused completes a typed refusal: INSUFFICIENT_BALANCE gets its details.
func (a *Account) refused(ctx context.Context, m *market, req exchange.OrderRequest, err error) error {
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InsufficientBalance {
		return err
	}
	spotSell := req.Kind == exchange.Spot && req.Side == exchange.SideSell
	asset := m.settle
	if req.Kind == exchange.Spot {
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
		if p, perr := a.ticker(ctx, req.Kind, m); perr == nil {
			price = p
		}
	}
	switch {
	case spotSell:
		required = &req.Amount
	case price.IsPositive():
		r := req.Amount.Mul(price)
		if req.Kind == exchange.Futures && req.Leverage > 1 {
			r = r.Div(decimal.NewFromInt(int64(req.Leverage))).RoundUp(8)
		}
		required = &r
	}
	restkit.Shortfall(e, asset, required, available, fmt.Sprintf("bybit retCode %d", codeOf(err)))
	return e
}

// lookup finds an order by orderLinkId: /v5/order/realtime (open orders and the recent
// closed ones), then /v5/order/history.
func (a *Account) lookup(ctx context.Context, m *market, link string) (bOrder, bool, error) {
	c := a.client(m.info.Kind)
	q := url.Values{"category": {m.category}, "symbol": {m.raw}, "orderLinkId": {link}}.Encode()
	for _, path := range []string{"/v5/order/realtime", "/v5/order/history"} {
		var res struct {
			List []bOrder `json:"list"`
		}
		if err := c.call(ctx, request{method: http.MethodGet, path: path, query: q, private: true}, true, 0, &res); err != nil {
			return bOrder{}, false, err
		}
		for _, o := range res.List {
			if o.OrderLinkID == link && (o.Symbol == "" || o.Symbol == m.raw) {
				return o, true, nil
			}
		}
	}
	return bOrder{}, false, nil
}

// GetOrder implements exchange.Exchange; an unknown order is exchange.ErrOrderNotFound.
func (a *Account) GetOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	m, err := a.marketLenient(ctx, kind, symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	o, found, err := a.lookup(ctx, m, LinkID(clientOrderID))
	if err != nil {
		return exchange.Order{}, a.client(kind).typed(err, "get order")
	}
	if !found {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	return toOrder(m, "", clientOrderID, o), nil
}

// CancelOrder implements exchange.Exchange through POST /v5/order/cancel by orderLinkId
// (spot conditional orders with orderFilter StopOrder or tpslOrder, as Bybit requires). A
// finished order is returned with EXCHANGE_ERROR; an unknown one is ErrOrderNotFound.
func (a *Account) CancelOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c := a.client(kind)
	m, err := a.marketLenient(ctx, kind, symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	link := LinkID(clientOrderID)
	o, found, err := a.lookup(ctx, m, link)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	if !found {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	if st := statusOf(o.OrderStatus); st.Terminal() {
		return toOrder(m, "", clientOrderID, o), errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, st)
	}
	body := struct {
		Category    string `json:"category"`
		Symbol      string `json:"symbol"`
		OrderLinkID string `json:"orderLinkId"`
		OrderFilter string `json:"orderFilter,omitempty"`
	}{Category: m.category, Symbol: m.raw, OrderLinkID: link}
	if m.category == "spot" {
		body.OrderFilter = spotFilter(o)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return exchange.Order{}, err
	}
	// Cancelling twice is harmless: retried like a read.
	cerr := c.call(ctx, request{method: http.MethodPost, path: "/v5/order/cancel", body: data, private: true}, true, 0, nil)
	if cerr != nil && classOf(cerr) != classGone {
		return toOrder(m, "", clientOrderID, o), c.typed(cerr, "cancel order")
	}
	after, found, err := a.lookup(ctx, m, link)
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

// spotFilter is the orderFilter a spot order is cancelled with.
func spotFilter(o bOrder) string {
	switch {
	case strings.EqualFold(o.StopOrderType, "tpslOrder"):
		return "tpslOrder"
	case o.TriggerPrice.Dec().IsPositive() || o.StopOrderType == "Stop" || o.StopOrderType == "StopOrder":
		return "StopOrder"
	}
	return "Order"
}

// statusOf maps Bybit's orderStatus (https://bybit-exchange.github.io/docs/v5/enum#orderstatus)
// to the spec's statuses (decision 10 in docs/decisions.md):
//
//	Created                                      pending (accepted, not yet in the matching engine)
//	New, Untriggered, Triggered, Active          open
//	PartiallyFilled                              partially_filled
//	Filled                                       filled
//	Cancelled, PartiallyFilledCanceled, Deactivated  cancelled (FilledAmount keeps any fill)
//	Rejected                                     rejected
//
// An unknown value is pending: not terminal, so it is read again.
func statusOf(s string) exchange.OrderStatus {
	switch s {
	case "New", "Untriggered", "Triggered", "Active":
		return exchange.StatusOpen
	case "PartiallyFilled":
		return exchange.StatusPartiallyFilled
	case "Filled":
		return exchange.StatusFilled
	case "Cancelled", "PartiallyFilledCanceled", "Deactivated":
		return exchange.StatusCancelled
	case "Rejected":
		return exchange.StatusRejected
	}
	return exchange.StatusPending
}

// feeAsset is the coin Bybit charges a fee in by default: a spot buy in the base coin, a
// spot sell in the quote coin (its rule for a positive fee rate); linear in the settle
// coin. Only an answer without cumFeeDetail is booked by it.
func feeAsset(m *market, side exchange.Side) string {
	if m.category == "spot" {
		if side == exchange.SideBuy {
			return m.info.Base
		}
		return m.info.Quote
	}
	return m.settle
}

// toOrder maps a Bybit order. typ is the request's type when known; otherwise it is read
// from the order (see typeOf).
func toOrder(m *market, typ exchange.OrderType, clientOrderID string, o bOrder) exchange.Order {
	side := exchange.SideBuy
	if o.Side == "Sell" {
		side = exchange.SideSell
	}
	if typ == "" {
		typ = typeOf(o)
	}
	created, _ := strconv.ParseInt(string(o.CreatedTime), 10, 64)
	updated, _ := strconv.ParseInt(string(o.UpdatedTime), 10, 64)
	out := exchange.Order{
		ID: o.OrderID, ClientOrderID: clientOrderID, Symbol: m.info.Symbol, Kind: m.info.Kind,
		Side: side, Type: typ, Status: statusOf(o.OrderStatus),
		Amount: o.Qty.Dec(), FilledAmount: o.CumExecQty.Dec(), AvgPrice: o.AvgPrice.Dec(),
		CreatedAt: created, UpdatedAt: updated,
	}
	out.Fee, out.FeeAsset = feeOf(m, side, o)
	return out
}

// feeOf is an order's fee and the asset it is in, by the rules of exchange.Order that the
// Binance adapter follows too:
//
//   - The fee is read from cumFeeDetail (coin → fee), which Bybit's order list documents
//     for spot and linear in place of cumExecFee, deprecated there. cumExecFee is read
//     only when an answer carries no cumFeeDetail at all, and is then taken to be in the
//     coin Bybit charges by default (feeAsset), since it does not say.
//   - A fee charged in one coin is reported in that coin: the base coin of a spot buy
//     (the executor books the smaller holding and converts it for PnL), the quote or
//     settle coin, or a third coin (a fee Bybit deducts in another coin, e.g. MNT), which
//     the executor does not count against PnL.
//   - A fee charged in several coins is reported in the quote (linear: settle) coin: the
//     base-coin part converted at the order's average price. A third coin's part cannot
//     be converted without its price and is left out, as the Binance adapter does.
//   - Nothing charged: zero, in no asset when nothing was filled.
func feeOf(m *market, side exchange.Side, o bOrder) (decimal.Decimal, string) {
	if o.CumFeeDetail == nil {
		fee := o.CumExecFee.Dec()
		if fee.IsZero() && !o.CumExecQty.Dec().IsPositive() {
			return fee, ""
		}
		return fee, feeAsset(m, side)
	}
	quote := m.info.Quote
	if m.category == "linear" && m.settle != "" {
		quote = m.settle
	}
	var coins []string
	for coin, v := range o.CumFeeDetail {
		if !v.Dec().IsZero() {
			coins = append(coins, coin)
		}
	}
	switch len(coins) {
	case 0:
		if !o.CumExecQty.Dec().IsPositive() {
			return decimal.Zero, ""
		}
		return decimal.Zero, quote
	case 1:
		return o.CumFeeDetail[coins[0]].Dec(), strings.ToUpper(coins[0])
	}
	total := decimal.Zero
	for _, coin := range coins {
		v := o.CumFeeDetail[coin].Dec()
		switch {
		case strings.EqualFold(coin, quote):
			total = total.Add(v)
		case strings.EqualFold(coin, m.info.Base):
			total = total.Add(v.Mul(o.AvgPrice.Dec()))
		}
	}
	return total, quote
}

// typeOf reads an order's type: a conditional order is a stop_loss when it closes on an
// adverse move (a sell triggered by a fall, a buy by a rise) and a take_profit otherwise.
// The direction is triggerDirection on linear (1 rise, 2 fall). Spot has none (create-order
// takes it for linear and inverse only) and no lastPriceOnCreated (the order pages leave it
// out for spot); it answers basePrice, the last price when the order was placed, and a
// trigger above it rises. An order that shows neither is reported a stop_loss: both only ever exit, and the
// caller that placed it knows which it asked for.
func typeOf(o bOrder) exchange.OrderType {
	switch o.StopOrderType {
	case "StopLoss", "PartialStopLoss":
		return exchange.StopLoss
	case "TakeProfit", "PartialTakeProfit":
		return exchange.TakeProfit
	}
	if trigger := o.TriggerPrice.Dec(); trigger.IsPositive() {
		dir := o.TriggerDirection
		if dir == 0 {
			ref := o.BasePrice.Dec()
			if !ref.IsPositive() {
				ref = o.LastPriceOnCreated.Dec()
			}
			if !ref.IsPositive() {
				return exchange.StopLoss
			}
			dir = 2
			if trigger.GreaterThan(ref) {
				dir = 1
			}
		}
		if (o.Side == "Sell") == (dir == 2) {
			return exchange.StopLoss
		}
		return exchange.TakeProfit
	}
	if o.OrderType == "Limit" {
		return exchange.Limit
	}
	return exchange.Market
}
