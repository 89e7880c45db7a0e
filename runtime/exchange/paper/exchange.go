package paper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
)

// PriceSource gives the current market price; runtime/marketdata's Provider is one.
type PriceSource interface {
	Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error)
}

// DefaultFeeRate is the spec's simulated fee, maker and taker alike.
var DefaultFeeRate = decimal.RequireFromString("0.001")

// MaxLeverage is the highest futures leverage the paper exchange takes.
const MaxLeverage = 125

// maxTxRetries bounds the fill scripts of one placement (fill.go); past it the placement
// is refused as busy, with nothing written.
const maxTxRetries = 50

// Fields of the account hash added by the exchange.
const fieldMargin = "margin" // futures initial margin reserved by open positions

// Exchange is the simulated exchange for one paper account, as seen by one bot (scope):
// the quote balance is the account's, shared by its bots; spot holdings and futures
// positions are kept per bot, so bots sharing an account never net against each other.
//
// Fills are immediate and complete at the limit price when one is given, else at the
// current market price rounded to the tick, with fee = notional × feeRate in the quote
// currency. Every fill moves the balance and records the order in one Redis script keyed
// by the client order ID: placing the same request twice returns the first order and
// moves the money once. An Exchange is opened per signal (it keeps the values it read).
type Exchange struct {
	rdb     redis.UniversalClient
	account string
	scope   string
	prices  PriceSource
	// ahead holds the account's values read ahead or met in fills (never nil).
	ahead *Ahead
	// records is the account's record in PostgreSQL (WithRecord); nil when it is not
	// recorded there.
	records *Records
	// co sends the fills' scripts with other signals' commands (WithCoalescer); nil: alone.
	co *store.Coalescer
	// Now is the clock (tests pin it).
	Now func() time.Time
}

var _ exchange.Exchange = (*Exchange)(nil)

// NewExchange is the paper exchange of accountID for the bot scope.
func NewExchange(rdb redis.UniversalClient, accountID, scope string, prices PriceSource, opts ...Option) *Exchange {
	x := &Exchange{rdb: rdb, account: accountID, scope: scope, prices: prices, Now: time.Now,
		ahead: &Ahead{}}
	for _, o := range opts {
		o(x)
	}
	return x
}

// Markets lists the catalogue (every paper market is quoted in USDT).
func (x *Exchange) Markets(_ context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	if kind != exchange.Spot && kind != exchange.Futures {
		return nil, errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
	}
	return Markets(kind), nil
}

// Ticker is the market price rounded to the symbol's tick.
func (x *Exchange) Ticker(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	m, ok := Market(kind, symbol)
	if !ok {
		return decimal.Zero, errs.New(errs.InvalidSymbol, "unknown symbol %q", symbol)
	}
	return x.ticker(ctx, m)
}

func (x *Exchange) ticker(ctx context.Context, m exchange.MarketInfo) (decimal.Decimal, error) {
	if x.prices == nil {
		return decimal.Zero, errs.New(errs.ExchangeError, "no market price source")
	}
	p, err := x.prices.Price(ctx, m.Kind, m.Symbol)
	if err != nil {
		return decimal.Zero, errs.Wrap(err, errs.ExchangeError, "no market price for %s", m.Symbol)
	}
	p = p.Div(m.TickSize).Round(0).Mul(m.TickSize)
	if !p.IsPositive() {
		return decimal.Zero, errs.New(errs.ExchangeError, "no market price for %s", m.Symbol)
	}
	return p, nil
}

// Balance is the account's quote balance (Locked: the futures margin of all its bots), or
// this bot's spot holding of a base asset.
func (x *Exchange) Balance(ctx context.Context, asset string) (exchange.Balance, error) {
	if asset == Quote {
		v, err := x.rdb.HMGet(ctx, store.PaperAccount(x.account), fieldBalance, fieldMargin).Result()
		if err != nil {
			return exchange.Balance{}, err
		}
		if v[0] == nil {
			return exchange.Balance{}, errs.New(errs.ExchangeDisconnected, "paper account not found")
		}
		free, err := decimal.NewFromString(v[0].(string))
		if err != nil {
			return exchange.Balance{}, fmt.Errorf("paper account %s: corrupt balance: %w", x.account, err)
		}
		locked, err := decOf(v[1])
		if err != nil {
			return exchange.Balance{}, err
		}
		return exchange.Balance{Asset: asset, Free: free, Locked: locked}, nil
	}
	h, err := x.Holding(ctx, asset)
	return exchange.Balance{Asset: asset, Free: h}, err
}

// Holding is this bot's spot holding of a base asset.
func (x *Exchange) Holding(ctx context.Context, base string) (decimal.Decimal, error) {
	v, err := x.rdb.HGet(ctx, store.PaperPositions(x.account), spotField(x.scope, base)).Result()
	if errors.Is(err, redis.Nil) {
		return decimal.Zero, nil
	}
	if err != nil {
		return decimal.Zero, err
	}
	return decimal.NewFromString(v)
}

// FuturesPosition is this bot's futures position on symbol at the exchange (nil if none).
func (x *Exchange) FuturesPosition(ctx context.Context, symbol string) (*FuturesPosition, error) {
	v, err := x.rdb.HGet(ctx, store.PaperPositions(x.account), futField(x.scope, symbol)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p FuturesPosition
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("paper position %s: corrupt: %w", symbol, err)
	}
	return &p, nil
}

// FuturesPosition is a one-way futures position at the paper exchange.
type FuturesPosition struct {
	Side     position.Side  `json:"side"`
	Size     httpapi.Number `json:"size"`
	Cost     httpapi.Number `json:"cost"`
	Margin   httpapi.Number `json:"margin"`
	Leverage int            `json:"leverage"`
}

// SetLeverage checks the value; the paper exchange takes leverage with each opening order.
func (x *Exchange) SetLeverage(_ context.Context, symbol string, leverage int) error {
	if _, ok := Market(exchange.Futures, symbol); !ok {
		return errs.New(errs.InvalidSymbol, "unknown futures symbol %q", symbol)
	}
	if leverage < 1 || leverage > MaxLeverage {
		return errs.New(errs.InvalidAmount, "leverage must be between 1 and %d", MaxLeverage)
	}
	return nil
}

// GetOrder finds this bot's order by client order ID: under its own key, else in the
// orders hash of the layout before (one round trip for both), unless this exchange
// placed or read it already.
func (x *Exchange) GetOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	v := x.ahead.order(clientOrderID)
	if v == "" {
		var err error
		if v, err = x.readOrder(ctx, clientOrderID); err != nil {
			return exchange.Order{}, err
		}
	}
	if v == "" {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	rec, err := decodeOrder(v)
	if err != nil {
		return exchange.Order{}, err
	}
	if rec.Scope != x.scope || rec.Order.Symbol != symbol || rec.Order.Kind != kind {
		return exchange.Order{}, exchange.ErrOrderNotFound
	}
	return rec.Order, nil
}

// readOrder reads the order stored under clientOrderID ("" for none).
func (x *Exchange) readOrder(ctx context.Context, clientOrderID string) (string, error) {
	var own, old *redis.StringCmd
	if _, err := x.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		own = p.Get(ctx, store.PaperOrder(x.account, clientOrderID))
		old = p.HGet(ctx, store.PaperOrders(x.account), clientOrderID)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return "", err
	}
	for _, cmd := range []*redis.StringCmd{own, old} {
		if v, err := cmd.Result(); err == nil {
			return v, nil
		} else if !errors.Is(err, redis.Nil) {
			return "", err
		}
	}
	return x.recall(ctx, clientOrderID)
}

// recall is the order stored under clientOrderID in PostgreSQL ("" for none) when ctx
// asks for it (Recall) and the account is recorded; "" otherwise.
func (x *Exchange) recall(ctx context.Context, clientOrderID string) (string, error) {
	if x.records == nil || !recalled(ctx) {
		return "", nil
	}
	v, _, err := x.records.Order(ctx, x.account, clientOrderID)
	return v, err
}

// CancelOrder: paper orders fill at once, so there is never an open order to cancel.
func (x *Exchange) CancelOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	o, err := x.GetOrder(ctx, kind, symbol, clientOrderID)
	if err != nil {
		return o, err
	}
	return o, errs.New(errs.ExchangeError, "order %s is %s and cannot be cancelled", clientOrderID, o.Status)
}

// storedOrder is an order in the account's order hash.
type storedOrder struct {
	Scope string         `json:"scope"`
	Order exchange.Order `json:"order"`
}

func encodeOrder(scope string, o exchange.Order) (string, error) {
	b, err := json.Marshal(storedOrder{Scope: scope, Order: o})
	return string(b), err
}

func decodeOrder(v string) (storedOrder, error) {
	var s storedOrder
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("paper order: corrupt: %w", err)
	}
	return s, nil
}

// PlaceOrder fills a market or limit order at once (see Exchange): fillFrom computes the
// fill without Redis, and one script on the account's slot stores it when the values it
// was computed from are still the stored ones (placeFill).
func (x *Exchange) PlaceOrder(ctx context.Context, req exchange.OrderRequest) (exchange.Order, error) {
	m, err := x.check(req)
	if err != nil {
		return exchange.Order{}, err
	}
	price := req.Price
	if req.Type == exchange.Market {
		if price, err = x.ticker(ctx, m); err != nil {
			// A repeated request for an order already placed needs no price.
			if o, gerr := x.GetOrder(ctx, req.Kind, req.Symbol, req.ClientOrderID); gerr == nil {
				return o, nil
			}
			return exchange.Order{}, err
		}
	}
	return x.placeFill(ctx, m, req, x.fillKeys(m, req.Kind, req.ClientOrderID), price)
}

// fillKeys are the keys a fill reads and writes: the account, its holdings and the bot's
// field in them, the order under its client order ID (cid) and the old orders hash.
type fillKeys struct {
	acct, pos, posField, order, orders, cid string
}

func (x *Exchange) fillKeys(m exchange.MarketInfo, kind exchange.Kind, cid string) fillKeys {
	k := fillKeys{acct: store.PaperAccount(x.account), pos: store.PaperPositions(x.account),
		posField: spotField(x.scope, m.Base), order: store.PaperOrder(x.account, cid),
		orders: store.PaperOrders(x.account), cid: cid}
	if kind == exchange.Futures {
		k.posField = futField(x.scope, m.Symbol)
	}
	return k
}

// fillRead is what a fill computes from: the account's money, fee rate and the bot's
// holding or position (prev, "" for none).
type fillRead struct {
	st      fillState
	feeRate decimal.Decimal
	prev    string
}

// placed is the stored order v, answered to a placement under its client order ID; one
// stored by another bot of the account is refused.
func (x *Exchange) placed(v, clientOrderID string) (exchange.Order, error) {
	rec, err := decodeOrder(v)
	if err != nil {
		return exchange.Order{}, err
	}
	if rec.Scope != x.scope {
		return exchange.Order{}, errs.New(errs.ExchangeError, "client order ID %s is taken", clientOrderID)
	}
	return rec.Order, nil
}

// readOf decodes a fill's input for m. A missing account or one in another currency than
// m's quote is refused.
func (x *Exchange) readOf(m exchange.MarketInfo, in fillInput) (fillRead, error) {
	if in.acct[0] == "" {
		return fillRead{}, errs.New(errs.ExchangeDisconnected, "paper account not found")
	}
	if cur := in.acct[3]; cur != "" && cur != m.Quote {
		return fillRead{}, errs.New(errs.InvalidSymbol, "%s is quoted in %s; the paper account holds %s", m.Symbol, m.Quote, cur)
	}
	r := fillRead{feeRate: DefaultFeeRate, prev: in.prev}
	var err error
	if r.st.balance, err = decimal.NewFromString(in.acct[0]); err != nil {
		return fillRead{}, fmt.Errorf("paper account %s: corrupt balance: %w", x.account, err)
	}
	if r.st.margin, err = decOf(in.acct[1]); err != nil {
		return fillRead{}, err
	}
	if s := in.acct[2]; s != "" {
		if r.feeRate, err = decimal.NewFromString(s); err != nil {
			return fillRead{}, fmt.Errorf("paper account %s: corrupt feeRate: %w", x.account, err)
		}
	}
	return r, nil
}

// fillWrite is what a fill writes besides its order: the account's money and the bot's
// holding or position (pos, "" to delete it).
type fillWrite struct {
	st  fillState
	pos string
}

// fillFrom fills req completely at price, now, on the input in, without Redis: the order
// (fee = notional × the account's fee rate, in the quote currency) and the writes. A fill
// the account cannot pay for, or below the market's minimum, is refused.
func (x *Exchange) fillFrom(m exchange.MarketInfo, req exchange.OrderRequest, price decimal.Decimal, in fillInput) (exchange.Order, fillWrite, error) {
	r, err := x.readOf(m, in)
	if err != nil {
		return exchange.Order{}, fillWrite{}, err
	}
	now := x.Now().UnixMilli()
	o := exchange.Order{
		ID: orderID(x.account, req.ClientOrderID), ClientOrderID: req.ClientOrderID,
		Symbol: m.Symbol, Kind: req.Kind, Side: req.Side, Type: req.Type, Status: exchange.StatusFilled,
		Amount: req.Amount, FilledAmount: req.Amount, AvgPrice: price,
		Fee: position.Fee(req.Amount.Mul(price), r.feeRate), FeeAsset: m.Quote, CreatedAt: now, UpdatedAt: now,
	}
	w := fillWrite{st: r.st}
	if req.Kind == exchange.Futures {
		w.pos, err = w.st.futures(m, req, o, r.prev)
	} else {
		w.pos, err = w.st.spot(m, req, o, r.prev)
	}
	if err != nil {
		return exchange.Order{}, fillWrite{}, err
	}
	return o, w, nil
}

// check validates a request against the market's rules, like a venue would.
func (x *Exchange) check(req exchange.OrderRequest) (exchange.MarketInfo, error) {
	if !validClientID(req.ClientOrderID) {
		return exchange.MarketInfo{}, errs.New(errs.ExchangeError, "client order ID must be 1-36 characters of [A-Za-z0-9._:/-]")
	}
	m, ok := Market(req.Kind, req.Symbol)
	if !ok {
		return m, errs.New(errs.InvalidSymbol, "unknown %s symbol %q", req.Kind, req.Symbol)
	}
	if req.Side != exchange.SideBuy && req.Side != exchange.SideSell {
		return m, errs.New(errs.ExchangeError, "unknown side %q", req.Side)
	}
	switch req.Type {
	case exchange.Market:
	case exchange.Limit:
		if !req.Price.IsPositive() || !m.RoundPrice(req.Price).Equal(req.Price) {
			return m, errs.New(errs.InvalidPrice, "price %s is not a positive multiple of the tick %s", req.Price, m.TickSize)
		}
	default:
		return m, errs.New(errs.ExchangeError, "the paper exchange takes market and limit orders, not %q", req.Type)
	}
	if !req.Amount.IsPositive() || !m.RoundAmount(req.Amount).Equal(req.Amount) {
		return m, errs.New(errs.InvalidAmount, "amount %s is not a positive multiple of the step %s", req.Amount, m.StepSize)
	}
	if req.Amount.LessThan(m.MinQty) {
		return m, errs.New(errs.InvalidAmount, "amount %s is below the minimum %s", req.Amount, m.MinQty)
	}
	if req.Kind == exchange.Futures && !req.ReduceOnly && (req.Leverage < 1 || req.Leverage > MaxLeverage) {
		return m, errs.New(errs.InvalidAmount, "leverage must be between 1 and %d", MaxLeverage)
	}
	return m, nil
}

// fillState is the account's money during one fill.
type fillState struct {
	balance decimal.Decimal // free quote balance
	margin  decimal.Decimal // reserved futures margin of the account
}

func insufficient(required, available decimal.Decimal, asset string) error {
	return errs.New(errs.InsufficientBalance, "insufficient %s balance: %s required, %s available", asset, required, available).
		WithDetails(map[string]any{"required": required, "available": available, "asset": asset})
}

func minNotional(m exchange.MarketInfo, notional decimal.Decimal) error {
	if notional.LessThan(m.MinNotional) {
		return errs.New(errs.InvalidAmount, "order value %s %s is below the minimum %s", notional, m.Quote, m.MinNotional).
			WithDetails(map[string]any{"notional": notional, "minNotional": m.MinNotional})
	}
	return nil
}

// spot: a buy pays notional + fee and credits the base; a sell debits the base and credits
// notional − fee.
func (st *fillState) spot(m exchange.MarketInfo, req exchange.OrderRequest, o exchange.Order, prev string) (string, error) {
	held := decimal.Zero
	if prev != "" {
		var err error
		if held, err = decimal.NewFromString(prev); err != nil {
			return "", fmt.Errorf("paper holding: corrupt: %w", err)
		}
	}
	notional := o.Amount.Mul(o.AvgPrice)
	if req.Side == exchange.SideBuy {
		if err := minNotional(m, notional); err != nil {
			return "", err
		}
		required := notional.Add(o.Fee)
		if required.GreaterThan(st.balance) {
			return "", insufficient(required, st.balance, m.Quote)
		}
		st.balance = st.balance.Sub(required)
		return held.Add(o.Amount).String(), nil
	}
	if o.Amount.GreaterThan(held) {
		return "", insufficient(o.Amount, held, m.Base)
	}
	st.balance = st.balance.Add(notional.Sub(o.Fee))
	if rest := held.Sub(o.Amount); rest.IsPositive() {
		return rest.String(), nil
	}
	return "", nil
}

// futures (one-way, isolated): an order in the position's direction (or opening one)
// reserves notional/leverage + fee; an opposite or reduce-only order releases the margin
// share plus the realised PnL minus the fee (position.Settle).
func (st *fillState) futures(m exchange.MarketInfo, req exchange.OrderRequest, o exchange.Order, prev string) (string, error) {
	var p *FuturesPosition
	if prev != "" {
		p = &FuturesPosition{}
		if err := json.Unmarshal([]byte(prev), p); err != nil {
			return "", fmt.Errorf("paper position: corrupt: %w", err)
		}
	}
	notional := o.Amount.Mul(o.AvgPrice)
	side := position.SideOf(req.Side)
	reducing := req.ReduceOnly || (p != nil && p.Side != side)
	if reducing {
		if p == nil {
			return "", errs.New(errs.PositionNotFound, "no %s position to reduce", m.Symbol)
		}
		if p.Side == side {
			return "", errs.New(errs.ExchangeError, "a reduce-only %s would increase the %s position", req.Side, p.Side)
		}
		if o.Amount.GreaterThan(p.Size.Decimal) {
			return "", errs.New(errs.InvalidAmount, "amount %s exceeds the %s position of %s (one-way mode: close before opening the other side)", o.Amount, p.Side, p.Size)
		}
		s := position.Settle(exchange.Futures, p.Side, p.Size.Decimal, p.Cost.Decimal, p.Margin.Decimal, decimal.Zero, o.Amount, o.AvgPrice, o.Fee)
		st.balance = st.balance.Add(s.Credit)
		st.margin = st.margin.Sub(s.MarginShare)
		p.Size, p.Cost, p.Margin = httpapi.Num(p.Size.Sub(o.Amount)), httpapi.Num(p.Cost.Sub(s.CostShare)), httpapi.Num(p.Margin.Sub(s.MarginShare))
		if !p.Size.IsPositive() {
			return "", nil
		}
		b, err := json.Marshal(p)
		return string(b), err
	}
	if err := minNotional(m, notional); err != nil {
		return "", err
	}
	if p == nil {
		p = &FuturesPosition{Side: side, Leverage: req.Leverage}
	}
	margin := position.InitialMargin(notional, p.Leverage)
	required := margin.Add(o.Fee)
	if required.GreaterThan(st.balance) {
		return "", insufficient(required, st.balance, m.Quote)
	}
	st.balance = st.balance.Sub(required)
	st.margin = st.margin.Add(margin)
	p.Size, p.Cost, p.Margin = httpapi.Num(p.Size.Add(o.Amount)), httpapi.Num(p.Cost.Add(notional)), httpapi.Num(p.Margin.Add(margin))
	b, err := json.Marshal(p)
	return string(b), err
}

// Kinds of the fields of the holdings hash: "<kind>|<bot>|<base or symbol>".
const (
	spotKind = "spot"
	futKind  = "fut"
)

func spotField(scope, base string) string     { return spotKind + "|" + scope + "|" + base }
func futField(scope, symbol string) string    { return futKind + "|" + scope + "|" + symbol }
func orderID(account, clientID string) string { return "P" + hash(account + "/" + clientID)[:19] }

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func validClientID(id string) bool {
	if id == "" || len(id) > 36 {
		return false
	}
	return strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-") == ""
}

func decOf(v any) (decimal.Decimal, error) {
	s, _ := v.(string)
	if s == "" {
		return decimal.Zero, nil
	}
	return decimal.NewFromString(s)
}
