package binance

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/futures"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// clientIDRE is Binance's newClientOrderId (and clientAlgoId) pattern.
var clientIDRE = regexp.MustCompile(`^[.A-Z:/a-z0-9_-]{1,36}$`)

// target is an order request resolved to Binance's symbol.
type target struct {
	req               exchange.OrderRequest
	bsym, base, quote string
	algo              bool // a futures conditional order: Algo Order API
	// mode is the futures position mode the order is sent for, read once per PlaceOrder
	// call before its first request: every request of the call is built for that mode,
	// never re-sent in another.
	mode exchange.PositionMode
}

// positionSide is what a futures order sends as positionSide: in hedge mode the side it
// acts on (OrderRequest.HedgeLong), in one-way mode nothing. Binance's New Order and New
// Algo Order pages: positionSide defaults to BOTH for one-way mode (the only value it then
// takes) and must be LONG or SHORT in hedge mode; leaving it out in one-way mode keeps the
// request exactly what it was before hedge mode was supported.
func (t *target) positionSide() string {
	switch {
	case t.mode != exchange.Hedge:
		return ""
	case t.req.HedgeLong():
		return "LONG"
	}
	return "SHORT"
}

// reduceOnly: an exit is sent reduceOnly in one-way mode only; hedge mode refuses the
// parameter (-1106), positionSide and side make the order an exit there.
func (t *target) reduceOnly() bool { return t.mode != exchange.Hedge && t.req.ReduceOnly }

func (t *target) api() api {
	if t.req.Kind == exchange.Futures {
		return futuresAPI
	}
	return spotAPI
}

func conditional(t exchange.OrderType) bool {
	return t == exchange.StopLoss || t == exchange.TakeProfit
}

// PlaceOrder places an order, never twice for one ClientOrderID:
//
//  1. it looks the client ID up first (GET order by origClientOrderId, or the algo order
//     by clientAlgoId) and returns the order it finds;
//  2. it places only when Binance says the order does not exist (-2013);
//  3. a place that gets no answer (time-out, dropped connection, HTTP 5xx) is followed by
//     lookups, and a new request is sent only once the lost one can no longer execute:
//     Binance refuses a request older than its recvWindow, so after timestamp +
//     recvWindow + ClockMargin "does not exist" is proof. Until then the method waits if its
//     budget allows, and otherwise returns an untyped error wrapping exchange.ErrUnreachable
//     (the outcome is unknown: the caller must look the order up later, not record a
//     rejection);
//  4. a refusal for a duplicate client ID (-2010 "Duplicate order sent.", -4116) returns
//     the existing order.
//
// Market and limit (GTC) orders on spot and futures; reduceOnly on futures; stop_loss and
// take_profit as spot STOP_LOSS / TAKE_PROFIT (…_LIMIT with a Price) and as futures
// conditional orders on the Algo Order API (STOP_MARKET / TAKE_PROFIT_MARKET, or STOP /
// TAKE_PROFIT with a Price and an Amount; always exits; Amount zero closes the whole
// position). A futures order is built for the account's position mode (read before the
// first futures order, again after ModeTTL): in hedge mode it names its side (positionSide
// LONG or SHORT, OrderRequest.HedgeLong) and sends no reduceOnly. If Binance answers that
// the side does not match the account's mode (-4061), the mode read is dropped and the
// answer is an EXCHANGE_ERROR saying the mode changed: the order is not re-sent in the
// other mode within the call. An opening futures order first sets the symbol's leverage to
// req.Leverage.
func (x *Account) PlaceOrder(ctx context.Context, req exchange.OrderRequest) (exchange.Order, error) {
	if err := validate(req); err != nil {
		return exchange.Order{}, err
	}
	ctx, cancel := x.budget(ctx)
	defer cancel()
	bsym, base, quote, err := x.resolve(ctx, req.Kind, req.Symbol)
	if err != nil {
		return exchange.Order{}, err
	}
	t := &target{req: req, bsym: bsym, base: base, quote: quote,
		algo: req.Kind == exchange.Futures && conditional(req.Type)}
	key := x.base(t.api()) + "|" + req.ClientOrderID
	unlock, err := placing.lock(ctx, key)
	if err != nil {
		return exchange.Order{}, outcomeUnknown(req.ClientOrderID, fmt.Errorf("another placement of the same order is in progress: %w", err))
	}
	defer unlock()
	return x.place(ctx, t, key)
}

// RequestWindow implements exchange.RequestWindow: MaxElapsed + RecvWindow + ClockMargin
// (12 s with the defaults). Every request a PlaceOrder call sends leaves within its budget
// (MaxElapsed), carries a timestamp no later than that, and Binance executes it only while
// its timestamp is less than recvWindow old by Binance's clock; ClockMargin covers the
// error of the clock offset (Binance takes timestamps up to 1 s ahead of its own clock).
// After the window a lookup's -2013 is proof that no request of the call will ever land.
//
// The in-process map inflight (call.go) is the same rule seen from inside this process: it
// dates a lost request from when it was sent, which is never before the call began, so it
// always ends within this window. The executor, which must also cover a caller that died,
// dates from the call (the staged request's send time) and waits this window.
func (c *client) RequestWindow() time.Duration {
	return c.cfg.MaxElapsed + c.cfg.RecvWindow + c.cfg.ClockMargin
}

func (x *Account) place(ctx context.Context, t *target, key string) (exchange.Order, error) {
	cid := t.req.ClientOrderID
	var lost *failure // the last place request without an answer
	submits := 0
	for {
		o, f := x.lookup(ctx, t)
		if f == nil {
			inflight.Delete(key)
			return o, nil
		}
		if !f.notFound() {
			if f.noAnswer || lost != nil {
				return exchange.Order{}, outcomeUnknown(cid, f)
			}
			return exchange.Order{}, typed(f, "order lookup")
		}
		// Not found. A request sent earlier may still be executed until its window ends.
		if until := inflightUntil(key); !until.IsZero() {
			if !pause(ctx, time.Until(until)) {
				if lost == nil {
					lost = &failure{op: "POST order", noAnswer: true, cause: errors.New("an earlier request got no answer")}
				}
				return exchange.Order{}, outcomeUnknown(cid, fmt.Errorf("no answer, and its recvWindow ends at %s: %w",
					until.Format(time.RFC3339Nano), lost))
			}
			continue
		}
		if submits >= x.cfg.Attempts {
			// Every request got no answer, and Binance has proven that none was executed.
			return exchange.Order{}, unreachable(lost, "order")
		}
		if submits == 0 {
			if err := x.prepareFutures(ctx, t); err != nil {
				return exchange.Order{}, err
			}
		}
		submits++
		sent := time.Now()
		o, f = x.submit(ctx, t)
		switch {
		case f == nil:
			inflight.Delete(key)
			return o, nil
		case f.noAnswer:
			lost = f
			inflight.Store(key, sent.Add(x.cfg.RecvWindow+x.cfg.ClockMargin))
			x.log.Warn("order request got no answer; looking it up before any new request",
				"clientOrderId", cid, "err", f)
			if !pause(ctx, x.backoff(submits-1)) {
				return exchange.Order{}, outcomeUnknown(cid, f)
			}
		case f.duplicate():
			// An open order holds the client ID: it is this one, the lookup missed it.
			o, lf := x.lookup(ctx, t)
			if lf == nil {
				inflight.Delete(key)
				return o, nil
			}
			if lf.noAnswer || lost != nil {
				return exchange.Order{}, outcomeUnknown(cid, lf)
			}
			return exchange.Order{}, typed(f, "order")
		case t.req.Kind == exchange.Futures && f.modeMismatch():
			// The account's mode is not the one read: forget it, so that the next order
			// reads it again, and say so; re-sending in the other mode here would place an
			// order nobody checked against the account's positions.
			inflight.Delete(key)
			x.forgetMode()
			return exchange.Order{}, modeChanged(f, t.mode)
		default:
			// A definitive refusal. (If an earlier request got no answer, it was proven
			// absent before this one was sent, so the refusal stands.)
			inflight.Delete(key)
			return exchange.Order{}, x.refused(ctx, t, f)
		}
	}
}

// refused is the error of a definitive refusal of an order: INSUFFICIENT_BALANCE with what
// the wallet holds, or Binance's refusal typed.
func (x *Account) refused(ctx context.Context, t *target, f *failure) error {
	if classifyCode(f.code, f.msg) == errs.InsufficientBalance && !f.authFailed() && !f.rateLimited() {
		return x.insufficient(ctx, t, f)
	}
	return typed(f, "order")
}

// prepareFutures readies a futures order before its first request: the account's position
// mode it is built for, and an opening order's leverage. Nothing was sent yet, so a failed
// read is a plain refusal of this call. Spot orders need neither.
func (x *Account) prepareFutures(ctx context.Context, t *target) error {
	if t.req.Kind != exchange.Futures {
		return nil
	}
	mode, f := x.futuresMode(ctx)
	if f != nil {
		return readError(f, "position mode")
	}
	t.mode = mode
	if !t.algo && !t.req.ReduceOnly && t.req.Leverage > 0 {
		return x.ensureLeverage(ctx, t.bsym, t.req.Leverage)
	}
	return nil
}

// validate is exchange.OrderRequest.Validate after Binance's own rule: the client order ID
// goes to Binance as it is (newClientOrderId, clientAlgoId), and Binance refuses one that
// does not fit clientIDRE.
func validate(req exchange.OrderRequest) error {
	if !clientIDRE.MatchString(req.ClientOrderID) {
		return errs.New(errs.ExchangeError, "client order ID must be 1-36 characters of [A-Za-z0-9._:/-]")
	}
	return req.Validate()
}

func side(s exchange.Side) string {
	if s == exchange.SideSell {
		return "SELL"
	}
	return "BUY"
}

// submit sends the order request once (plus one re-sync retry after -1021).
func (x *Account) submit(ctx context.Context, t *target) (exchange.Order, *failure) {
	req := t.req
	switch {
	case t.algo:
		return x.submitAlgo(ctx, t)
	case req.Kind == exchange.Futures:
		var res *futures.CreateOrderResponse
		f := x.do(ctx, futuresAPI, "POST /fapi/v1/order", false, func(ctx context.Context) error {
			s := x.fut().NewCreateOrderService().Symbol(t.bsym).Side(futures.SideType(side(req.Side))).
				Quantity(req.Amount.String()).NewClientOrderID(req.ClientOrderID).
				NewOrderResponseType(futures.NewOrderRespTypeRESULT)
			if req.Type == exchange.Limit {
				s = s.Type(futures.OrderTypeLimit).TimeInForce(futures.TimeInForceTypeGTC).Price(req.Price.String())
			} else {
				s = s.Type(futures.OrderTypeMarket)
			}
			if ps := t.positionSide(); ps != "" {
				s = s.PositionSide(futures.PositionSideType(ps))
			}
			if t.reduceOnly() {
				s = s.ReduceOnly(true)
			}
			var err error
			res, err = s.Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
			return err
		})
		if f != nil {
			return exchange.Order{}, f
		}
		r := rawOrder{id: strconv.FormatInt(res.OrderID, 10), orderID: res.OrderID, cid: res.ClientOrderID,
			side: string(res.Side), typ: string(res.Type), status: string(res.Status),
			orig: dec(res.OrigQuantity), executed: dec(res.ExecutedQuantity), cumQuote: dec(res.CumQuote),
			avg: dec(res.AvgPrice), created: res.UpdateTime, updated: res.UpdateTime}
		return x.finish(ctx, t.req.Kind, t.bsym, t.base, t.quote, r)
	default:
		var res *binance.CreateOrderResponse
		f := x.do(ctx, spotAPI, "POST /api/v3/order", false, func(ctx context.Context) error {
			s := x.spot().NewCreateOrderService().Symbol(t.bsym).Side(binance.SideType(side(req.Side))).
				Quantity(req.Amount.String()).NewClientOrderID(req.ClientOrderID).
				NewOrderRespType(binance.NewOrderRespTypeFULL)
			switch req.Type {
			case exchange.Market:
				s = s.Type(binance.OrderTypeMarket)
			case exchange.Limit:
				s = s.Type(binance.OrderTypeLimit).TimeInForce(binance.TimeInForceTypeGTC).Price(req.Price.String())
			case exchange.StopLoss, exchange.TakeProfit:
				typ := binance.OrderTypeStopLoss
				if req.Type == exchange.TakeProfit {
					typ = binance.OrderTypeTakeProfit
				}
				if req.Price.IsPositive() {
					typ += "_LIMIT"
					s = s.TimeInForce(binance.TimeInForceTypeGTC).Price(req.Price.String())
				}
				s = s.Type(typ).StopPrice(req.StopPrice.String())
			}
			var err error
			res, err = s.Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
			return err
		})
		if f != nil {
			return exchange.Order{}, f
		}
		r := rawOrder{id: strconv.FormatInt(res.OrderID, 10), orderID: res.OrderID, cid: res.ClientOrderID,
			side: string(res.Side), typ: string(res.Type), status: string(res.Status),
			orig: dec(res.OrigQuantity), executed: dec(res.ExecutedQuantity), cumQuote: dec(res.CummulativeQuoteQuantity),
			created: res.TransactTime, updated: res.TransactTime, fillsKnown: len(res.Fills) > 0}
		for _, fl := range res.Fills {
			r.fills = append(r.fills, fill{price: dec(fl.Price), qty: dec(fl.Quantity), commission: dec(fl.Commission), asset: fl.CommissionAsset})
		}
		return x.finish(ctx, t.req.Kind, t.bsym, t.base, t.quote, r)
	}
}

func (x *Account) submitAlgo(ctx context.Context, t *target) (exchange.Order, *failure) {
	req := t.req
	typ := "STOP_MARKET"
	if req.Type == exchange.TakeProfit {
		typ = "TAKE_PROFIT_MARKET"
	}
	p := url.Values{
		"algoType":     {"CONDITIONAL"},
		"symbol":       {t.bsym},
		"side":         {side(req.Side)},
		"triggerPrice": {req.StopPrice.String()},
		"workingType":  {"CONTRACT_PRICE"}, // last price, as the executor's own exit watcher
		"clientAlgoId": {req.ClientOrderID},
	}
	if req.Price.IsPositive() {
		typ = strings.TrimSuffix(typ, "_MARKET")
		p.Set("price", req.Price.String())
		p.Set("timeInForce", "GTC")
	}
	p.Set("type", typ)
	if ps := t.positionSide(); ps != "" {
		p.Set("positionSide", ps) // the side it closes; closePosition needs it too
	}
	if req.Amount.IsPositive() {
		p.Set("quantity", req.Amount.String())
		if t.mode != exchange.Hedge {
			p.Set("reduceOnly", "true") // a stop-loss or take-profit exits; it never opens
		}
	} else {
		// Validate refused a limit stop without an amount: Binance takes closePosition
		// only with STOP_MARKET and TAKE_PROFIT_MARKET.
		p.Set("closePosition", "true")
	}
	a, f := x.newAlgo(ctx, p)
	if f != nil {
		return exchange.Order{}, f
	}
	return x.algoToOrder(ctx, t.bsym, t.base, t.quote, a)
}

// rawOrder is an order as Binance answered it, before fees and mapping.
type rawOrder struct {
	id                            string
	orderID                       int64
	cid                           string
	side, typ, status             string
	orig, executed, cumQuote, avg decimal.Decimal
	created, updated              int64
	fills                         []fill
	fillsKnown                    bool
}

type fill struct {
	price, qty, commission decimal.Decimal
	asset                  string
}

// finish completes an order with its fee (from the fills of a FULL answer, or from the
// account's trades of that order) and maps it.
func (x *Account) finish(ctx context.Context, kind exchange.Kind, bsym, base, quote string, r rawOrder) (exchange.Order, *failure) {
	if r.executed.IsPositive() && !r.fillsKnown {
		fills, f := x.trades(ctx, kind, bsym, r.orderID, r.executed)
		if f != nil {
			// The order exists; only its fee is missing. Report "no answer" so that callers
			// look the order up again rather than treat this as a refusal.
			return exchange.Order{}, &failure{op: f.op, noAnswer: true,
				cause: fmt.Errorf("order %s exists but its trades could not be read: %w", r.cid, f)}
		}
		r.fills, r.fillsKnown = fills, true
	}
	return mapOrder(kind, base, quote, r), nil
}

// trades reads the account's trades of one order (spot /api/v3/myTrades, futures
// /fapi/v1/userTrades). Trades can trail the order by a moment: if they do not add up to
// the executed quantity, they are read once more.
func (x *Account) trades(ctx context.Context, kind exchange.Kind, bsym string, orderID int64, executed decimal.Decimal) ([]fill, *failure) {
	var out []fill
	for try := 0; try < 2; try++ {
		out = out[:0]
		var f *failure
		if kind == exchange.Futures {
			f = x.do(ctx, futuresAPI, "GET /fapi/v1/userTrades", true, func(ctx context.Context) error {
				list, err := x.fut().NewListAccountTradeService().Symbol(bsym).OrderID(orderID).Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
				for _, tr := range list {
					out = append(out, fill{price: dec(tr.Price), qty: dec(tr.Quantity), commission: dec(tr.Commission), asset: tr.CommissionAsset})
				}
				return err
			})
		} else {
			f = x.do(ctx, spotAPI, "GET /api/v3/myTrades", true, func(ctx context.Context) error {
				list, err := x.spot().NewListTradesService().Symbol(bsym).OrderId(orderID).Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
				for _, tr := range list {
					out = append(out, fill{price: dec(tr.Price), qty: dec(tr.Quantity), commission: dec(tr.Commission), asset: tr.CommissionAsset})
				}
				return err
			})
		}
		if f != nil {
			return nil, f
		}
		sum := decimal.Zero
		for _, fl := range out {
			sum = sum.Add(fl.qty)
		}
		if !sum.LessThan(executed) || !pause(ctx, 50*time.Millisecond) {
			break
		}
	}
	return out, nil
}

// mapOrder maps a Binance order to the executor's. AvgPrice: cumulative quote / executed
// quantity (spot cummulativeQuoteQty, futures cumQuote), else futures avgPrice. Fee: the
// fills' commissions in the quote asset; a commission charged only in the base asset (spot
// buys) is reported in the base asset, and converted at its fill's price when mixed with
// quote commissions; a commission in a third asset (BNB discount) is reported as such in
// FeeAsset when it is the only one.
func mapOrder(kind exchange.Kind, base, quote string, r rawOrder) exchange.Order {
	o := exchange.Order{
		ID: r.id, ClientOrderID: r.cid, Symbol: base + "/" + quote, Kind: kind,
		Side: exchange.SideBuy, Type: typeOf(r.typ), Status: statusOf(r.status),
		Amount: r.orig, FilledAmount: r.executed, AvgPrice: decimal.Zero, Fee: decimal.Zero,
		CreatedAt: r.created, UpdatedAt: r.updated,
	}
	if r.side == "SELL" {
		o.Side = exchange.SideSell
	}
	if r.executed.IsPositive() {
		if r.cumQuote.IsPositive() {
			o.AvgPrice = r.cumQuote.Div(r.executed)
		} else if r.avg.IsPositive() {
			o.AvgPrice = r.avg
		}
	}
	o.Fee, o.FeeAsset = feeOf(r.fills, base, quote)
	return o
}

func feeOf(fills []fill, base, quote string) (decimal.Decimal, string) {
	fee, inBase := decimal.Zero, decimal.Zero
	onlyBase := len(fills) > 0
	other := map[string]decimal.Decimal{}
	for _, f := range fills {
		switch f.asset {
		case quote:
			fee = fee.Add(f.commission)
			onlyBase = onlyBase && f.commission.IsZero()
		case base:
			fee = fee.Add(f.commission.Mul(f.price))
			inBase = inBase.Add(f.commission)
		default:
			onlyBase = false
			if f.commission.IsPositive() {
				other[f.asset] = other[f.asset].Add(f.commission)
			}
		}
	}
	// A spot buy's fee taken in the coin bought is reported as it is (FeeAsset = base):
	// the executor must book the smaller holding, and converts the fee for PnL itself.
	if onlyBase && inBase.IsPositive() {
		return inBase, base
	}
	if fee.IsZero() && len(other) == 1 {
		for a, v := range other {
			return v, a
		}
	}
	if fee.IsZero() && len(fills) == 0 {
		return fee, ""
	}
	return fee, quote
}

func typeOf(t string) exchange.OrderType {
	switch t {
	case "MARKET":
		return exchange.Market
	case "LIMIT", "LIMIT_MAKER":
		return exchange.Limit
	case "STOP_LOSS", "STOP_LOSS_LIMIT", "STOP", "STOP_MARKET", "TRAILING_STOP_MARKET":
		return exchange.StopLoss
	case "TAKE_PROFIT", "TAKE_PROFIT_LIMIT", "TAKE_PROFIT_MARKET":
		return exchange.TakeProfit
	}
	return exchange.OrderType(strings.ToLower(t))
}

// statusOf maps Binance's order status; an unknown one is pending (not terminal).
func statusOf(s string) exchange.OrderStatus {
	switch s {
	case "NEW", "PENDING_CANCEL":
		return exchange.StatusOpen
	case "PARTIALLY_FILLED":
		return exchange.StatusPartiallyFilled
	case "FILLED", "NEW_INSURANCE", "NEW_ADL":
		return exchange.StatusFilled
	case "CANCELED":
		return exchange.StatusCancelled
	case "REJECTED":
		return exchange.StatusRejected
	case "EXPIRED", "EXPIRED_IN_MATCH":
		return exchange.StatusExpired
	}
	return exchange.StatusPending
}

// lookup finds the order of t by its client ID.
func (x *Account) lookup(ctx context.Context, t *target) (exchange.Order, *failure) {
	if t.algo {
		a, f := x.getAlgo(ctx, t.req.ClientOrderID)
		if f != nil {
			return exchange.Order{}, f
		}
		return x.algoToOrder(ctx, t.bsym, t.base, t.quote, a)
	}
	return x.getRegular(ctx, t.req.Kind, t.bsym, t.base, t.quote, t.req.ClientOrderID, 0)
}

// getRegular queries an order by client ID (or by order ID when orderID is set).
func (x *Account) getRegular(ctx context.Context, kind exchange.Kind, bsym, base, quote, cid string, orderID int64) (exchange.Order, *failure) {
	var r rawOrder
	var f *failure
	if kind == exchange.Futures {
		f = x.do(ctx, futuresAPI, "GET /fapi/v1/order", true, func(ctx context.Context) error {
			s := x.fut().NewGetOrderService().Symbol(bsym)
			if orderID != 0 {
				s = s.OrderID(orderID)
			} else {
				s = s.OrigClientOrderID(cid)
			}
			res, err := s.Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
			if err == nil {
				r = rawOrder{id: strconv.FormatInt(res.OrderID, 10), orderID: res.OrderID, cid: res.ClientOrderID,
					side: string(res.Side), typ: string(res.Type), status: string(res.Status),
					orig: dec(res.OrigQuantity), executed: dec(res.ExecutedQuantity), cumQuote: dec(res.CumQuote),
					avg: dec(res.AvgPrice), created: res.Time, updated: res.UpdateTime}
			}
			return err
		})
	} else {
		f = x.do(ctx, spotAPI, "GET /api/v3/order", true, func(ctx context.Context) error {
			res, err := x.spot().NewGetOrderService().Symbol(bsym).OrigClientOrderID(cid).Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
			if err == nil {
				r = rawOrder{id: strconv.FormatInt(res.OrderID, 10), orderID: res.OrderID, cid: res.ClientOrderID,
					side: string(res.Side), typ: string(res.Type), status: string(res.Status),
					orig: dec(res.OrigQuantity), executed: dec(res.ExecutedQuantity), cumQuote: dec(res.CummulativeQuoteQuantity),
					created: res.Time, updated: res.UpdateTime}
			}
			return err
		})
	}
	if f != nil {
		return exchange.Order{}, f
	}
	return x.finish(ctx, kind, bsym, base, quote, r)
}

// algoToOrder maps a conditional order; once triggered, its fills are those of the order
// it placed (actualOrderId).
func (x *Account) algoToOrder(ctx context.Context, bsym, base, quote string, a *algoOrder) (exchange.Order, *failure) {
	o := exchange.Order{
		ID: "algo-" + strconv.FormatInt(a.AlgoID, 10), ClientOrderID: a.ClientAlgoID, Symbol: base + "/" + quote,
		Kind: exchange.Futures, Side: exchange.SideBuy, Type: typeOf(a.OrderType), Amount: dec(a.Quantity),
		FilledAmount: decimal.Zero, AvgPrice: decimal.Zero, Fee: decimal.Zero,
		CreatedAt: a.CreateTime, UpdatedAt: a.UpdateTime,
	}
	if a.Side == "SELL" {
		o.Side = exchange.SideSell
	}
	switch strings.ToUpper(a.AlgoStatus) {
	case "NEW", "TRIGGERING", "TRIGGERED":
		o.Status = exchange.StatusOpen
	case "FINISHED":
		o.Status = exchange.StatusExpired // without the order it placed, nothing is known filled
	case "CANCELED", "CANCELLED":
		o.Status = exchange.StatusCancelled
	case "EXPIRED":
		o.Status = exchange.StatusExpired
	case "REJECTED", "FAILED":
		o.Status = exchange.StatusRejected
	default:
		o.Status = exchange.StatusPending
	}
	if id := a.ActualOrderID.actual(); id != 0 {
		actual, f := x.getRegular(ctx, exchange.Futures, bsym, base, quote, "", id)
		if f != nil {
			return exchange.Order{}, f
		}
		o.Status, o.FilledAmount, o.AvgPrice, o.Fee, o.FeeAsset = actual.Status, actual.FilledAmount, actual.AvgPrice, actual.Fee, actual.FeeAsset
		if o.Amount.IsZero() {
			o.Amount = actual.Amount
		}
		if actual.UpdatedAt > o.UpdatedAt {
			o.UpdatedAt = actual.UpdatedAt
		}
	}
	return o, nil
}

// GetOrder finds an order by client order ID (futures: regular orders, then conditional
// orders of the Algo Order API). An unknown ID is exchange.ErrOrderNotFound. No answer is
// an untyped error wrapping exchange.ErrUnreachable (retry later).
func (x *Account) GetOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	o, _, err := x.getOrder(ctx, kind, symbol, clientOrderID)
	return o, err
}

func (x *Account) getOrder(ctx context.Context, kind exchange.Kind, symbol, cid string) (exchange.Order, bool, error) {
	if kind != exchange.Spot && kind != exchange.Futures {
		return exchange.Order{}, false, errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
	}
	bsym, base, quote, err := x.resolve(ctx, kind, symbol)
	if err != nil {
		return exchange.Order{}, false, err
	}
	algo := false
	o, f := x.getRegular(ctx, kind, bsym, base, quote, cid, 0)
	if f != nil && f.notFound() && kind == exchange.Futures {
		algo = true
		var a *algoOrder
		if a, f = x.getAlgo(ctx, cid); f == nil {
			o, f = x.algoToOrder(ctx, bsym, base, quote, a)
		}
	}
	switch {
	case f == nil:
		return o, algo, nil
	case f.notFound():
		return exchange.Order{}, false, fmt.Errorf("binance: %s %s %s: %w", kind, symbol, cid, exchange.ErrOrderNotFound)
	case f.noAnswer:
		return exchange.Order{}, false, fmt.Errorf("binance: order %s: %w: %w", cid, exchange.ErrUnreachable, f)
	}
	return exchange.Order{}, false, typed(f, "order lookup")
}

// CancelOrder cancels an open order (or conditional order) by client order ID and returns
// it as cancelled. An order already filled, cancelled or expired is returned with
// EXCHANGE_ERROR; an unknown one is exchange.ErrOrderNotFound.
func (x *Account) CancelOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	ctx, cancel := x.budget(ctx)
	defer cancel()
	o, algo, err := x.getOrder(ctx, kind, symbol, clientOrderID)
	if err != nil {
		return o, err
	}
	if o.Status.Terminal() {
		return o, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, o.Status)
	}
	bsym, _, _, err := x.resolve(ctx, kind, symbol)
	if err != nil {
		return o, err
	}
	var f *failure
	switch {
	case algo:
		f = x.cancelAlgo(ctx, clientOrderID)
	case kind == exchange.Futures:
		f = x.do(ctx, futuresAPI, "DELETE /fapi/v1/order", true, func(ctx context.Context) error {
			_, err := x.fut().NewCancelOrderService().Symbol(bsym).OrigClientOrderID(clientOrderID).Do(ctx, futures.WithRecvWindow(x.recvWindowMS()))
			return err
		})
	default:
		f = x.do(ctx, spotAPI, "DELETE /api/v3/order", true, func(ctx context.Context) error {
			_, err := x.spot().NewCancelOrderService().Symbol(bsym).OrigClientOrderID(clientOrderID).Do(ctx, binance.WithRecvWindow(x.recvWindowMS()))
			return err
		})
	}
	// Whatever the answer, the order's state now is the truth.
	after, _, gerr := x.getOrder(ctx, kind, symbol, clientOrderID)
	switch {
	case gerr != nil:
		if f != nil && !f.noAnswer {
			return o, typed(f, "cancellation")
		}
		return o, gerr
	case after.Status == exchange.StatusCancelled:
		return after, nil
	case after.Status.Terminal():
		return after, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, after.Status)
	case f == nil:
		return after, nil // accepted; the state catches up
	case f.noAnswer:
		return after, fmt.Errorf("binance: cancel of %s: outcome unknown: %w: %w", clientOrderID, exchange.ErrUnreachable, f)
	}
	return after, typed(f, "cancellation")
}

// insufficient is INSUFFICIENT_BALANCE with required and available where they can be
// computed: available from the wallet, required = amount × price (+ the fee estimate; on
// futures the initial margin amount × price / leverage + fee); a spot sell requires the
// base amount. The extra reads are best effort within the method's budget.
func (x *Account) insufficient(ctx context.Context, t *target, f *failure) error {
	e := typed(f, "order")
	req := t.req
	asset, required := t.quote, decimal.Zero
	if req.Kind == exchange.Spot && req.Side == exchange.SideSell {
		asset, required = t.base, req.Amount
	} else {
		price := req.Price
		if !price.IsPositive() {
			price = req.StopPrice
		}
		if !price.IsPositive() {
			if p, err := x.ticker(ctx, req.Kind, t.bsym); err == nil {
				price = p
			}
		}
		if price.IsPositive() {
			notional := req.Amount.Mul(price)
			if req.Kind == exchange.Futures {
				lev := int64(max(req.Leverage, 1))
				required = notional.DivRound(decimal.NewFromInt(lev), 8).Add(notional.Mul(x.cfg.FuturesFeeRate))
			} else {
				required = notional.Add(notional.Mul(x.cfg.SpotFeeRate))
			}
		}
	}
	var bal exchange.Balance
	var berr error
	if req.Kind == exchange.Futures {
		bal, berr = x.FuturesBalance(ctx, asset)
	} else {
		bal, berr = x.SpotBalance(ctx, asset)
	}
	e.Details["asset"] = asset
	if berr == nil {
		e.Details["available"] = bal.Free
	}
	if required.IsPositive() {
		e.Details["required"] = required
	}
	switch {
	case berr == nil && required.IsPositive():
		e.Message = fmt.Sprintf("insufficient %s balance on Binance: %s required, %s available", asset, required, bal.Free)
	case berr == nil:
		e.Message = fmt.Sprintf("insufficient %s balance on Binance: %s available (%s)", asset, bal.Free, f.msg)
	}
	return e
}
