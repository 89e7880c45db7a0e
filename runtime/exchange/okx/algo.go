package okx

// Stop-loss and take-profit orders through OKX's algo orders: POST /api/v5/trade/order-algo
// with ordType conditional, read back with GET /api/v5/trade/order-algo by algoClOrdId and
// cancelled with POST /api/v5/trade/cancel-algos by algoId. Once triggered, an algo order
// places an ordinary order (ordId); its fills and fee are that order's.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// aOrder is an algo order of GET /api/v5/trade/order-algo.
type aOrder struct {
	InstID        string   `json:"instId"`
	AlgoID        string   `json:"algoId"`
	AlgoClOrdID   string   `json:"algoClOrdId"`
	Side          string   `json:"side"`
	PosSide       string   `json:"posSide"`
	OrdType       string   `json:"ordType"`
	State         string   `json:"state"`
	Sz            num      `json:"sz"`
	CloseFraction num      `json:"closeFraction"`
	SlTriggerPx   num      `json:"slTriggerPx"`
	SlOrdPx       num      `json:"slOrdPx"`
	TpTriggerPx   num      `json:"tpTriggerPx"`
	TpOrdPx       num      `json:"tpOrdPx"`
	OrdID         string   `json:"ordId"`
	OrdIDList     []string `json:"ordIdList"`
	CTime         num      `json:"cTime"`
	UTime         num      `json:"uTime"`
}

// algoBody is the JSON body of POST /api/v5/trade/order-algo for a conditional order.
type algoBody struct {
	InstID          string `json:"instId"`
	TdMode          string `json:"tdMode"`
	Side            string `json:"side"`
	PosSide         string `json:"posSide,omitempty"`
	OrdType         string `json:"ordType"`
	Sz              string `json:"sz,omitempty"`
	TgtCcy          string `json:"tgtCcy,omitempty"`
	AlgoClOrdID     string `json:"algoClOrdId"`
	ReduceOnly      bool   `json:"reduceOnly,omitempty"`
	CloseFraction   string `json:"closeFraction,omitempty"`
	SlTriggerPx     string `json:"slTriggerPx,omitempty"`
	SlOrdPx         string `json:"slOrdPx,omitempty"`
	SlTriggerPxType string `json:"slTriggerPxType,omitempty"`
	TpTriggerPx     string `json:"tpTriggerPx,omitempty"`
	TpOrdPx         string `json:"tpOrdPx,omitempty"`
	TpTriggerPxType string `json:"tpTriggerPxType,omitempty"`
}

// algoOrderBody builds a stop_loss (slTriggerPx, slOrdPx) or take_profit (tpTriggerPx,
// tpOrdPx) as a conditional algo order: triggered by the last price (…TriggerPxType last,
// as the executor's own exit watcher), executed at the market (ordPx -1) or at Price.
// Spot: tdMode cash, tgtCcy base_ccy. Swaps: tdMode cross; net mode reduceOnly (an exit
// never opens a position); long/short mode posSide (the side it exits). Without an amount
// (a futures exit of the whole position, exchange.OrderRequest.ClosesPosition) it has no sz
// and closeFraction=1: OKX closes whatever the position holds when it triggers.
func algoOrderBody(m *market, req exchange.OrderRequest, id string, mode exchange.PositionMode) ([]byte, string, error) {
	b := algoBody{InstID: m.raw, TdMode: "cash", Side: sideOf(req.Side), OrdType: "conditional", AlgoClOrdID: id}
	ordPx := "-1"
	if req.Price.IsPositive() {
		ordPx = req.Price.String()
	}
	if req.Type == exchange.StopLoss {
		b.SlTriggerPx, b.SlOrdPx, b.SlTriggerPxType = req.StopPrice.String(), ordPx, "last"
	} else {
		b.TpTriggerPx, b.TpOrdPx, b.TpTriggerPxType = req.StopPrice.String(), ordPx, "last"
	}
	if req.ClosesPosition() {
		b.CloseFraction = "1"
	} else {
		sz, err := m.size(req.Amount)
		if err != nil {
			return nil, "", err
		}
		b.Sz = sz
	}
	if m.swap() {
		b.TdMode = "cross"
		if mode == exchange.Hedge {
			b.PosSide = posSide(req)
		} else {
			b.ReduceOnly = true
		}
	} else {
		b.TgtCcy = "base_ccy"
	}
	data, err := json.Marshal(b)
	return data, b.Sz, err
}

// placeAlgo places a stop_loss or take_profit with the same guarantees as PlaceOrder: the
// algoClOrdId is looked up first, a duplicate (51065) returns the order that has it, and a
// placement without an answer is looked up and never sent again inside the window. Algo
// orders take no expTime: OKX bounds them only by the timestamp check on arrival
// (TimestampWindow), which RequestWindow covers.
func (a *Account) placeAlgo(ctx context.Context, m *market, req exchange.OrderRequest, id string, mode exchange.PositionMode) (exchange.Order, error) {
	body, sz, err := algoOrderBody(m, req, id, mode)
	if err != nil {
		return exchange.Order{}, err
	}
	c := a.client(req.Kind)
	if ao, found, err := a.lookupAlgo(ctx, m, id); err != nil {
		return exchange.Order{}, c.typed(err, "get algo order")
	} else if found {
		return a.existingAlgo(ctx, m, req, sz, ao)
	}
	capacity := min(restkit.Remaining(ctx)-a.createReserve(), a.timeout/2)
	if capacity < 50*time.Millisecond {
		return exchange.Order{}, noTime(ctx)
	}
	var ack []struct {
		AlgoID string `json:"algoId"`
	}
	err = c.call(ctx, request{method: http.MethodPost, path: "/api/v5/trade/order-algo", body: body, private: true}, false, capacity, &ack)
	if err == nil {
		algoID := ""
		if len(ack) > 0 {
			algoID = ack[0].AlgoID
		}
		return a.confirmAlgo(ctx, m, req, id, algoID), nil
	}
	switch classOf(err) {
	case classDuplicate:
		ao, found, lerr := a.lookupAlgo(ctx, m, id)
		if lerr != nil || !found {
			if lerr == nil {
				lerr = err
			}
			return exchange.Order{}, fmt.Errorf("%w (client order ID %s exists but cannot be read): %w: %w", ErrOrderUnconfirmed, req.ClientOrderID, exchange.ErrUnreachable, lerr)
		}
		return a.existingAlgo(ctx, m, req, sz, ao)
	case classMode:
		a.dropMode()
		return exchange.Order{}, c.typed(err, "place algo order")
	}
	if !transient(err) {
		return exchange.Order{}, a.refused(ctx, m, req, c.typed(err, "place algo order"))
	}
	for i := 0; ; i++ {
		ao, found, lerr := a.lookupAlgo(ctx, m, id)
		if lerr == nil && found {
			if o, oerr := a.algoToOrder(ctx, m, req.Type, req.ClientOrderID, ao); oerr == nil {
				return o, nil
			}
			return algoPending(m, req, ao), nil
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

// confirmAlgo reads an acknowledged algo order back; if it cannot be read, it is reported
// pending.
func (a *Account) confirmAlgo(ctx context.Context, m *market, req exchange.OrderRequest, id, algoID string) exchange.Order {
	for i := 0; i < 3; i++ {
		ao, found, err := a.lookupAlgo(ctx, m, id)
		if err != nil {
			break
		}
		if found {
			if o, err := a.algoToOrder(ctx, m, req.Type, req.ClientOrderID, ao); err == nil {
				return o
			}
			return algoPending(m, req, ao)
		}
		if restkit.Remaining(ctx) < 150*time.Millisecond || !exchange.Sleep(ctx, 25*time.Millisecond<<i, 0) {
			break
		}
	}
	return algoPending(m, req, aOrder{AlgoID: algoID})
}

// algoPending is an algo order OKX took but that could not be read completely.
func algoPending(m *market, req exchange.OrderRequest, ao aOrder) exchange.Order {
	now := time.Now().UnixMilli()
	id := ""
	if ao.AlgoID != "" {
		id = "algo-" + ao.AlgoID
	}
	return exchange.Order{ID: id, ClientOrderID: req.ClientOrderID, Symbol: m.info.Symbol, Kind: req.Kind,
		Side: req.Side, Type: req.Type, Status: exchange.StatusPending, Amount: req.Amount,
		FeeAsset: defaultFeeAsset(m), CreatedAt: now, UpdatedAt: now}
}

// existingAlgo answers a request whose algoClOrdId an algo order already has; one that is
// not this request's (other side, size or kind) means the ID is taken.
func (a *Account) existingAlgo(ctx context.Context, m *market, req exchange.OrderRequest, sz string, ao aOrder) (exchange.Order, error) {
	want := decimal.Zero
	if sz != "" {
		want, _ = decimal.NewFromString(sz)
	}
	if ao.Side != sideOf(req.Side) || !ao.Sz.Dec().Equal(want) || algoType(ao) != req.Type {
		return exchange.Order{}, errs.New(errs.ExchangeError, "client order ID %s is already used by another okx order", req.ClientOrderID)
	}
	o, err := a.algoToOrder(ctx, m, req.Type, req.ClientOrderID, ao)
	if err != nil {
		return algoPending(m, req, ao), nil
	}
	return o, nil
}

// lookupAlgo finds an algo order by algoClOrdId.
func (a *Account) lookupAlgo(ctx context.Context, m *market, id string) (aOrder, bool, error) {
	c := a.client(m.info.Kind)
	var res []aOrder
	q := url.Values{"algoClOrdId": {id}}.Encode()
	err := c.call(ctx, request{method: http.MethodGet, path: "/api/v5/trade/order-algo", query: q, private: true}, true, 0, &res)
	if classOf(err) == classNotFound {
		return aOrder{}, false, nil
	}
	if err != nil {
		return aOrder{}, false, err
	}
	for _, ao := range res {
		if ao.AlgoClOrdID == id && (ao.InstID == "" || ao.InstID == m.raw) {
			return ao, true, nil
		}
	}
	return aOrder{}, false, nil
}

// algoType is a stop_loss when the order carries a stop-loss trigger, else a take_profit.
func algoType(ao aOrder) exchange.OrderType {
	if ao.SlTriggerPx != "" && ao.SlTriggerPx.Dec().IsPositive() {
		return exchange.StopLoss
	}
	return exchange.TakeProfit
}

// algoStatusOf maps an algo order's state: live and pause are open; effective (triggered,
// its order placed) is that order's status; canceled, order_failed and partially_failed
// (triggered, but the order it placed was refused) are cancelled: the status machine does
// not go from open to rejected.
func algoStatusOf(state string) exchange.OrderStatus {
	switch state {
	case "live", "pause", "partially_effective":
		return exchange.StatusOpen
	case "canceled", "order_failed", "partially_failed":
		return exchange.StatusCancelled
	case "effective":
		return exchange.StatusFilled
	}
	return exchange.StatusPending
}

// algoToOrder maps an algo order; a triggered one (effective) takes status, fills, price
// and fee from the order it placed, which is read (GET /api/v5/trade/order by ordId). Order.ID
// is "algo-" + algoId.
func (a *Account) algoToOrder(ctx context.Context, m *market, typ exchange.OrderType, clientOrderID string, ao aOrder) (exchange.Order, error) {
	side := exchange.SideBuy
	if ao.Side == "sell" {
		side = exchange.SideSell
	}
	if typ == "" {
		typ = algoType(ao)
	}
	created, _ := strconv.ParseInt(string(ao.CTime), 10, 64)
	updated, _ := strconv.ParseInt(string(ao.UTime), 10, 64)
	out := exchange.Order{ID: "algo-" + ao.AlgoID, ClientOrderID: clientOrderID, Symbol: m.info.Symbol,
		Kind: m.info.Kind, Side: side, Type: typ, Status: algoStatusOf(ao.State), Amount: m.base(ao.Sz.Dec()),
		FeeAsset: defaultFeeAsset(m), CreatedAt: created, UpdatedAt: updated}
	if ao.State != "effective" {
		return out, nil
	}
	ordID := ao.OrdID
	if ordID == "" && len(ao.OrdIDList) > 0 {
		ordID = ao.OrdIDList[0]
	}
	if ordID == "" {
		out.Status = exchange.StatusOpen // triggered; its order is not known yet
		return out, nil
	}
	o, found, err := a.lookupByID(ctx, m, ordID)
	if err != nil {
		return exchange.Order{}, err
	}
	if !found {
		out.Status = exchange.StatusOpen
		return out, nil
	}
	child := toOrder(m, typ, clientOrderID, o)
	out.Status, out.FilledAmount, out.AvgPrice, out.Fee, out.FeeAsset = child.Status, child.FilledAmount, child.AvgPrice, child.Fee, child.FeeAsset
	if out.Amount.IsZero() {
		out.Amount = child.Amount // closeFraction: the position's size when it triggered
	}
	out.UpdatedAt = max(out.UpdatedAt, child.UpdatedAt)
	return out, nil
}

// cancelAlgo cancels the algo order holding algoClOrdId id; unknown is ErrOrderNotFound.
func (a *Account) cancelAlgo(ctx context.Context, m *market, clientOrderID, id string) (exchange.Order, error) {
	c := a.client(m.info.Kind)
	ao, found, err := a.lookupAlgo(ctx, m, id)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get algo order")
	}
	if !found {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	before, err := a.algoToOrder(ctx, m, "", clientOrderID, ao)
	if err != nil {
		return exchange.Order{}, c.typed(err, "get order")
	}
	switch ao.State {
	case "live", "pause", "partially_effective":
	default:
		return before, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, before.Status)
	}
	body, err := json.Marshal([]struct {
		AlgoID string `json:"algoId"`
		InstID string `json:"instId"`
	}{{ao.AlgoID, m.raw}})
	if err != nil {
		return exchange.Order{}, err
	}
	// Cancelling twice is harmless: retried like a read.
	cerr := c.call(ctx, request{method: http.MethodPost, path: "/api/v5/trade/cancel-algos", body: body, private: true}, true, 0, nil)
	if cerr != nil && classOf(cerr) != classGone {
		return before, c.typed(cerr, "cancel algo order")
	}
	after, found, err := a.lookupAlgo(ctx, m, id)
	if err != nil || !found {
		if err == nil {
			err = &apiError{status: http.StatusOK, msg: "the cancelled algo order cannot be read back"}
		}
		return before, c.typed(err, "get algo order")
	}
	out, err := a.algoToOrder(ctx, m, "", clientOrderID, after)
	if err != nil {
		return before, c.typed(err, "get order")
	}
	if out.Status != exchange.StatusCancelled {
		return out, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, out.Status)
	}
	return out, nil
}
