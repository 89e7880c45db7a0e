// Package binancefake is an in-process Binance (spot and USDⓈ-M futures on one
// httptest server, told apart by path) for the adapter's tests. It authenticates like
// Binance (X-MBX-APIKEY, HMAC-SHA256 signature over the exact query string + body,
// timestamp within recvWindow of its clock) and refuses with Binance's codes, including
// every parameter combination Binance documents as invalid that the adapter could send
// (RULES.md lists them with their codes and the pages they come from); it keeps
// balances, positions, orders (by orderId and clientOrderId), trades and conditional (algo)
// orders; and it injects failures (error answers, 429/418 with Retry-After, 5xx, delays,
// dropped connections before or after an order is applied, requests held in transit until
// the test releases them: HoldNext).
//
// Matching model (simplified, documented):
//   - market orders fill completely at the price set with SetPrice;
//   - limit orders that are marketable (buy at or above the price, sell at or below) fill
//     at once at the current price; others rest (status NEW, funds locked on spot) and fill
//     at their limit price when SetPrice crosses them;
//   - spot STOP_LOSS / TAKE_PROFIT and futures algo orders trigger when SetPrice crosses
//     their stop/trigger price, and then fill as market orders (…_LIMIT / STOP / TAKE_PROFIT
//     become limit orders at their price);
//   - fees: spot 0.1 % (buys pay in the base asset, sells in the quote asset, like
//     Binance without BNB), futures 0.05 % in USDT; SetFeeRates changes them;
//   - futures: one-way mode (one net position per symbol, positionSide BOTH) unless the
//     account is switched to hedge mode (SetHedgeMode, or POST /fapi/v1/positionSide/dual
//     while no position or open order exists), which keeps a LONG and a SHORT position per
//     symbol; margin = |position| × entry / leverage, available balance = wallet − margin
//     (unrealised PnL ignored);
//   - a client order ID is refused as a duplicate only while an order holding it is open,
//     as on Binance (a filled order's ID can be used again: the adapter must look up
//     first).
package binancefake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange/fakehold"
	"github.com/sigops/sigops/runtime/exchange/fakekit"
)

// The key pair New registers.
const (
	APIKey    = "fakeKey0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
	APISecret = "fakeSecret9876543210zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIH"
)

// Restrictions is the apiRestrictions document of the key.
type Restrictions struct {
	IPRestrict                 bool
	EnableReading              bool
	EnableSpotAndMarginTrading bool
	EnableFutures              bool
	EnableMargin               bool
	EnableWithdrawals          bool
	EnableInternalTransfer     bool
	PermitsUniversalTransfer   bool
}

// Request is one request the server received: Params merges the query string and the body
// (signature left out); Query, Body and the API-key header are kept exactly as sent, so that
// a test can check what was signed and how.
type Request struct {
	Method, Path string
	Params       url.Values
	Query, Body  string
	APIKey       string
	ContentType  string
}

// Server is the fake Binance.
type Server struct {
	ts        *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	mu           sync.Mutex
	keys         map[string]string
	skew         time.Duration
	restrictions Restrictions
	spotFee      decimal.Decimal
	futFee       decimal.Decimal
	prices       map[string]decimal.Decimal
	spotBal      map[string]*balance
	futWallet    map[string]decimal.Decimal
	hedge        bool // the futures position mode: false one-way, true hedge (dual side)
	positions    map[posKey]*position
	leverage     map[string]int
	orders       []*order
	byID         map[int64]*order
	byCID        map[string][]*order // "s|cid" / "f|cid", oldest first
	algos        []*algoOrder
	nextID       int64
	nextTrade    int64
	faults       fakekit.Faults[Fault]
	placed       map[string]int
	reqs         []Request
	routes       map[string]endpoint
}

type balance struct{ free, locked decimal.Decimal }

// position is one futures position: signed amount (a SHORT one is negative) and entry.
type position struct{ amt, entry decimal.Decimal }

// posKey names a position: a symbol and its side, BOTH in one-way mode, LONG or SHORT in
// hedge mode.
type posKey struct{ symbol, side string }

// New starts a fake with the key pair APIKey/APISecret, prices BTCUSDT 50000, ETHUSDT 3000,
// DOGEUSDT 0.1, 10000 USDT in the spot wallet and 10000 USDT in the futures wallet, a key
// that may read and trade spot and futures (no withdrawals, no transfers, no IP
// restriction), and leverage 20 on every futures symbol.
func New() *Server {
	s := &Server{
		closing:      make(chan struct{}),
		keys:         map[string]string{APIKey: APISecret},
		restrictions: Restrictions{EnableReading: true, EnableSpotAndMarginTrading: true, EnableFutures: true},
		spotFee:      decimal.RequireFromString("0.001"),
		futFee:       decimal.RequireFromString("0.0005"),
		prices: map[string]decimal.Decimal{
			"BTCUSDT": decimal.RequireFromString("50000"), "ETHUSDT": decimal.RequireFromString("3000"),
			"DOGEUSDT": decimal.RequireFromString("0.1"),
		},
		spotBal:   map[string]*balance{"USDT": {free: decimal.NewFromInt(10000)}},
		futWallet: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)},
		positions: map[posKey]*position{},
		byID:      map[int64]*order{},
		byCID:     map[string][]*order{},
		leverage:  map[string]int{},
		nextID:    1000,
		nextTrade: 5000,
		placed:    map[string]int{},
	}
	s.routes = s.buildRoutes()
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.ts.Start()
	return s
}

// URL is the base URL of both APIs.
func (s *Server) URL() string { return s.ts.URL }

// Close stops the server; delayed requests are abandoned.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// AddKey registers another key pair (all keys share one account).
func (s *Server) AddKey(key, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = secret
}

// SetPermissions sets the key's restrictions.
func (s *Server) SetPermissions(r Restrictions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restrictions = r
}

// SetClockSkew moves the server's clock (positive: the server is ahead).
func (s *Server) SetClockSkew(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew = d
}

// SetFeeRates sets the spot and futures fee rates ("0.001").
func (s *Server) SetFeeRates(spot, futures string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotFee, s.futFee = decimal.RequireFromString(spot), decimal.RequireFromString(futures)
}

// SetPrice sets a symbol's price (spot and futures alike, "BTCUSDT") and fills the resting
// orders and triggers the conditional orders it crosses.
func (s *Server) SetPrice(symbol, price string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prices[symbol] = decimal.RequireFromString(price)
	s.matchSpot(symbol)
	s.matchFutures(symbol)
}

// SetSpotBalance sets the free spot balance of an asset.
func (s *Server) SetSpotBalance(asset, free string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spot(asset).free = decimal.RequireFromString(free)
}

// SetFuturesBalance sets the futures wallet balance of an asset.
func (s *Server) SetFuturesBalance(asset, wallet string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.futWallet[asset] = decimal.RequireFromString(wallet)
}

// SpotBalance is the spot wallet's free and locked balance of asset.
func (s *Server) SpotBalance(asset string) (free, locked decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.spot(asset)
	return b.free, b.locked
}

// FuturesBalance is the futures wallet balance of asset and the available balance.
func (s *Server) FuturesBalance(asset string) (wallet, available decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.futWallet[asset], s.available(asset)
}

// Position is the futures position of symbol: signed amount and entry price. In hedge mode
// it is the net of the long and the short position (entry that of the larger one).
func (s *Server) Position(symbol string) (amount, entry decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	amount, entry = decimal.Zero, decimal.Zero
	largest := decimal.Zero
	for k, p := range s.positions {
		if k.symbol != symbol {
			continue
		}
		amount = amount.Add(p.amt)
		if p.amt.Abs().GreaterThan(largest) {
			largest, entry = p.amt.Abs(), p.entry
		}
	}
	return amount, entry
}

// SidePosition is one side of symbol's futures position: side "LONG" or "SHORT" in hedge
// mode, "BOTH" in one-way mode. A SHORT amount is negative.
func (s *Server) SidePosition(symbol, side string) (amount, entry decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.positions[posKey{symbol, side}]
	if p == nil {
		return decimal.Zero, decimal.Zero
	}
	return p.amt, p.entry
}

// SetHedgeMode switches the account's futures position mode (true: hedge, false: one-way),
// as a user would in Binance's web interface; unlike POST /fapi/v1/positionSide/dual it
// does not check for open positions, so that a test can change the mode under an adapter.
func (s *Server) SetHedgeMode(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hedge = on
}

// HedgeMode reports whether the account is in hedge mode.
func (s *Server) HedgeMode() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hedge
}

// Leverage is the futures leverage of symbol.
func (s *Server) Leverage(symbol string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lev(symbol)
}

// Placed is how many orders (regular or conditional, spot or futures) were created with
// the client order ID.
func (s *Server) Placed(clientOrderID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placed[clientOrderID]
}

// Requests lists the requests received, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is how many requests had the method and path.
func (s *Server) Count(method, path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// Fault is an injected failure. Method and Path (empty: any) select the requests it hits.
type Fault struct {
	Method, Path string
	// Status and Code answer with an error instead of handling the request (Code 0: the
	// body is Body, or empty). RetryAfter is sent as the Retry-After header.
	Status     int
	Code       int
	Msg        string
	Body       string
	RetryAfter string
	// Delay holds the request before anything else (then it is handled normally unless
	// another field says otherwise). The recvWindow is checked after the delay, as
	// Binance checks it on arrival.
	Delay time.Duration
	// Drop closes the connection without handling the request.
	Drop bool
	// DropAfterApply handles the request (an order is placed) and closes the connection
	// without answering.
	DropAfterApply bool

	hold *Held // HoldNext
}

// Held is a request the fake holds in transit (HoldNext): sent, not answered, not yet seen
// by Binance. Released, it arrives at that moment (the recvWindow is checked then, as
// Binance checks it on arrival) and is handled: an order sent by a client that has since
// died or given up is applied late. Dropped, it is lost. The test decides when, which a
// Delay cannot (a lookup by another client must come first).
type Held = fakehold.Held

// HoldNext holds the next request with method and path until Release or Drop.
func (s *Server) HoldNext(method, path string) *Held {
	h := fakehold.New()
	s.FailNext(1, Fault{Method: method, Path: path, hold: h})
	return h
}

// On restricts the fault to one endpoint.
func (f Fault) On(method, path string) Fault {
	f.Method, f.Path = method, path
	return f
}

// Reject answers HTTP 400 with a Binance error code.
func Reject(code int, msg string) Fault {
	return Fault{Status: http.StatusBadRequest, Code: code, Msg: msg}
}

// RateLimited answers 429 -1003 with Retry-After.
func RateLimited(retryAfterSeconds int) Fault {
	return Fault{Status: http.StatusTooManyRequests, Code: -1003, RetryAfter: strconv.Itoa(retryAfterSeconds),
		Msg: "Too much request weight used; current limit is 6000 request weight per 1 MINUTE. Please use WebSocket Streams for live updates to avoid polling the API."}
}

// Banned answers 418 -1003 with Retry-After (an IP ban).
func Banned(retryAfterSeconds int) Fault {
	return Fault{Status: http.StatusTeapot, Code: -1003, RetryAfter: strconv.Itoa(retryAfterSeconds),
		Msg: "Way too much request weight used; IP banned until 1700000000000. Please use WebSocket Streams for live updates to avoid bans."}
}

// ServerError answers a 5xx: 500 and 503 with Binance's JSON (-1000, -1008), others with
// a gateway's HTML page.
func ServerError(status int) Fault {
	switch status {
	case http.StatusInternalServerError:
		return Fault{Status: status, Code: -1000, Msg: "An unknown error occurred while processing the request."}
	case http.StatusServiceUnavailable:
		return Fault{Status: status, Code: -1008, Msg: "Server is currently overloaded with other requests. Please try again in a few minutes."}
	}
	return Fault{Status: status, Body: fakekit.GatewayPage(status)}
}

// Delay holds requests for d.
func Delay(d time.Duration) Fault { return Fault{Delay: d} }

// Drop closes the connection without handling the request.
func Drop() Fault { return Fault{Drop: true} }

// DropAfterApply handles the request and closes the connection without answering.
func DropAfterApply() Fault { return Fault{DropAfterApply: true} }

// FailNext arms f for the next n requests it matches.
func (s *Server) FailNext(n int, f Fault) { s.faults.Arm(f, n) }

func (s *Server) takeFault(method, path string) *Fault {
	f, ok := s.faults.Take(func(f Fault) bool {
		return (f.Method == "" || f.Method == method) && (f.Path == "" || f.Path == path)
	})
	if !ok {
		return nil
	}
	return &f
}

// call is one request being handled.
type call struct {
	r      *http.Request
	body   string
	params url.Values
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := &call{r: r, body: string(raw), params: url.Values{}}
	for _, src := range []string{r.URL.RawQuery, c.body} {
		v, _ := url.ParseQuery(src)
		for k, vs := range v {
			if k != "signature" {
				c.params[k] = append(c.params[k], vs...)
			}
		}
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Params: c.params,
		Query: r.URL.RawQuery, Body: c.body, APIKey: r.Header.Get("X-MBX-APIKEY"),
		ContentType: r.Header.Get("Content-Type")})
	s.mu.Unlock()

	f := s.takeFault(r.Method, r.URL.Path)
	if f != nil && f.hold != nil {
		defer f.hold.Done()
		if !f.hold.Hold(w, s.closing) {
			return
		}
	}
	if f != nil {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-s.closing:
				t.Stop()
				return
			}
		}
		if f.Drop {
			fakehold.HangUp(w)
			return
		}
		if f.Status != 0 {
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			if f.Code != 0 {
				writeErr(w, f.Status, f.Code, f.Msg)
			} else {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(f.Status)
				io.WriteString(w, f.Body)
			}
			return
		}
	}
	rec := httptest.NewRecorder()
	s.route(rec, c)
	if f != nil && f.DropAfterApply {
		fakehold.HangUp(w)
		return
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func writeErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg})
}

// apiErr is a Binance refusal raised inside a handler.
type apiErr struct {
	status int
	code   int
	msg    string
}

func reject(code int, msg string) *apiErr { return &apiErr{http.StatusBadRequest, code, msg} }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type perm int

const (
	permRead perm = iota
	permSpot
	permFutures
)

// now is the server's clock in ms.
func (s *Server) now() int64 { return time.Now().Add(s.skew).UnixMilli() }

// authenticate checks a signed request like Binance: the key, the signature over the
// exact query string + body (the signature parameter removed), the timestamp within
// recvWindow, and the key's permission for the endpoint.
func (s *Server) authenticate(c *call, need perm) *apiErr {
	key := c.r.Header.Get("X-MBX-APIKEY")
	if key == "" {
		return &apiErr{http.StatusUnauthorized, -2014, "API-key format invalid."}
	}
	secret, ok := s.keys[key]
	if !ok {
		return &apiErr{http.StatusUnauthorized, -2015, "Invalid API-key, IP, or permissions for action."}
	}
	sig := c.r.URL.Query().Get("signature")
	if sig == "" {
		v, _ := url.ParseQuery(c.body)
		sig = v.Get("signature")
	}
	if sig == "" {
		return reject(-1102, "Mandatory parameter 'signature' was not sent, was empty/null, or malformed.")
	}
	ts, err := strconv.ParseInt(c.params.Get("timestamp"), 10, 64)
	if err != nil {
		return reject(-1102, "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.")
	}
	window := int64(5000)
	if v := c.params.Get("recvWindow"); v != "" {
		if window, err = strconv.ParseInt(v, 10, 64); err != nil || window <= 0 {
			return reject(-1100, "Illegal characters found in parameter 'recvWindow'.")
		}
		if window > 60000 {
			return reject(-1131, "recvWindow must be less than 60000")
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(withoutSignature(c.r.URL.RawQuery) + withoutSignature(c.body)))
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(sig))) {
		return reject(-1022, "Signature for this request is not valid.")
	}
	if now := s.now(); ts >= now+1000 || now-ts > window {
		return reject(-1021, "Timestamp for this request is outside of the recvWindow.")
	}
	r := s.restrictions
	if (need == permRead && !r.EnableReading) || (need == permSpot && !r.EnableSpotAndMarginTrading) ||
		(need == permFutures && !r.EnableFutures) {
		return &apiErr{http.StatusUnauthorized, -2015, "Invalid API-key, IP, or permissions for action."}
	}
	return nil
}

// withoutSignature removes the signature parameter from a query string or body, keeping
// every other byte as sent.
func withoutSignature(s string) string {
	if s == "" {
		return ""
	}
	parts := strings.Split(s, "&")
	kept := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, "signature=") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

type endpoint struct {
	need   perm
	signed bool
	// params are the parameters Binance documents for the endpoint (signed endpoints also
	// take timestamp, recvWindow and signature); any other is refused with -1104, as
	// Binance refuses a parameter it does not read.
	params []string
	h      func(*call) (any, *apiErr)
}

// Parameters of the endpoints, from the pages RULES.md cites.
var (
	spotOrderParams = []string{"symbol", "side", "type", "timeInForce", "quantity", "quoteOrderQty", "price",
		"newClientOrderId", "strategyId", "strategyType", "stopPrice", "trailingDelta", "icebergQty",
		"newOrderRespType", "selfTradePreventionMode", "pegPriceType", "pegOffsetValue", "pegOffsetType"}
	futuresOrderParams = []string{"symbol", "side", "positionSide", "type", "timeInForce", "quantity",
		"reduceOnly", "price", "newClientOrderId", "stopPrice", "closePosition", "activationPrice",
		"callbackRate", "workingType", "priceProtect", "newOrderRespType", "priceMatch",
		"selfTradePreventionMode", "goodTillDate"}
	algoOrderParams = []string{"algoType", "symbol", "side", "positionSide", "type", "timeInForce", "quantity",
		"price", "triggerPrice", "workingType", "priceMatch", "closePosition", "priceProtect", "reduceOnly",
		"activatePrice", "callbackRate", "clientAlgoId", "newOrderRespType", "selfTradePreventionMode",
		"goodTillDate"}
	orderQueryParams = []string{"symbol", "orderId", "origClientOrderId"}
	tradeListParams  = []string{"symbol", "orderId", "startTime", "endTime", "fromId", "limit"}
	algoQueryParams  = []string{"algoId", "clientAlgoId"}
)

func (s *Server) buildRoutes() map[string]endpoint {
	return map[string]endpoint{
		"GET /api/v3/time": {h: s.serverTime},
		"GET /api/v3/exchangeInfo": {params: []string{"symbol", "symbols", "permissions", "showPermissionSets",
			"symbolStatus"}, h: s.spotInfo},
		"GET /api/v3/ticker/price":             {params: []string{"symbol", "symbols", "symbolStatus"}, h: s.tickerPrice},
		"GET /api/v3/account":                  {need: permRead, signed: true, params: []string{"omitZeroBalances"}, h: s.spotAccount},
		"POST /api/v3/order":                   {need: permSpot, signed: true, params: spotOrderParams, h: s.spotNewOrder},
		"GET /api/v3/order":                    {need: permRead, signed: true, params: orderQueryParams, h: s.spotGetOrder},
		"DELETE /api/v3/order":                 {need: permSpot, signed: true, params: append([]string{"newClientOrderId", "cancelRestrictions"}, orderQueryParams...), h: s.spotCancelOrder},
		"GET /api/v3/myTrades":                 {need: permRead, signed: true, params: tradeListParams, h: s.spotTrades},
		"GET /sapi/v1/account/apiRestrictions": {need: permRead, signed: true, h: s.apiRestrictions},
		"GET /fapi/v1/time":                    {h: s.serverTime},
		"GET /fapi/v1/exchangeInfo":            {h: s.futuresInfo},
		"GET /fapi/v1/ticker/price":            {params: []string{"symbol"}, h: s.tickerPrice},
		"GET /fapi/v2/ticker/price":            {params: []string{"symbol"}, h: s.tickerPrice},
		"GET /fapi/v2/balance":                 {need: permFutures, signed: true, h: s.futuresBalance},
		"GET /fapi/v3/balance":                 {need: permFutures, signed: true, h: s.futuresBalance},
		"POST /fapi/v1/leverage":               {need: permFutures, signed: true, params: []string{"symbol", "leverage"}, h: s.futuresLeverage},
		"POST /fapi/v1/order":                  {need: permFutures, signed: true, params: futuresOrderParams, h: s.futuresNewOrder},
		"GET /fapi/v1/order":                   {need: permFutures, signed: true, params: orderQueryParams, h: s.futuresGetOrder},
		"DELETE /fapi/v1/order":                {need: permFutures, signed: true, params: orderQueryParams, h: s.futuresCancelOrder},
		"GET /fapi/v1/userTrades":              {need: permFutures, signed: true, params: tradeListParams, h: s.futuresTrades},
		"POST /fapi/v1/algoOrder":              {need: permFutures, signed: true, params: algoOrderParams, h: s.algoNew},
		"GET /fapi/v1/algoOrder":               {need: permFutures, signed: true, params: algoQueryParams, h: s.algoGet},
		// The cancel page spells its parameters algoid / clientalgoid; the query and new-order
		// pages (and the clients in use) algoId / clientAlgoId: both are read.
		"DELETE /fapi/v1/algoOrder":       {need: permFutures, signed: true, params: append([]string{"algoid", "clientalgoid"}, algoQueryParams...), h: s.algoCancel},
		"GET /fapi/v1/positionSide/dual":  {need: permFutures, signed: true, h: s.positionMode},
		"POST /fapi/v1/positionSide/dual": {need: permFutures, signed: true, params: []string{"dualSidePosition"}, h: s.changePositionMode},
		"GET /fapi/v3/positionRisk":       {need: permFutures, signed: true, params: []string{"symbol"}, h: s.positionRisk},
	}
}

// unread refuses a request carrying a parameter the endpoint does not read, with Binance's
// -1104 and its counts (every distinct parameter, timestamp and signature included).
func unread(c *call, ep endpoint) *apiErr {
	known := map[string]bool{}
	if ep.signed {
		known["timestamp"], known["recvWindow"] = true, true
	}
	for _, p := range ep.params {
		known[p] = true
	}
	sent, read := len(c.params), len(c.params)
	if c.r.URL.Query().Has("signature") || strings.Contains("&"+c.body, "&signature=") {
		sent, read = sent+1, read+1
	}
	for k := range c.params {
		if !known[k] {
			read--
		}
	}
	if read == sent {
		return nil
	}
	return reject(-1104, fmt.Sprintf("Not all sent parameters were read; read '%d' parameter(s) but was sent '%d'.", read, sent))
}

// route dispatches one request; signed endpoints are authenticated first.
func (s *Server) route(w http.ResponseWriter, c *call) {
	ep, ok := s.routes[c.r.Method+" "+c.r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body><h1>404 Not Found</h1></body></html>")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ep.signed {
		if e := s.authenticate(c, ep.need); e != nil {
			writeErr(w, e.status, e.code, e.msg)
			return
		}
	}
	if e := unread(c, ep); e != nil {
		writeErr(w, e.status, e.code, e.msg)
		return
	}
	v, e := ep.h(c)
	if e != nil {
		writeErr(w, e.status, e.code, e.msg)
		return
	}
	writeJSON(w, v)
}

func (s *Server) serverTime(*call) (any, *apiErr) {
	return map[string]any{"serverTime": s.now()}, nil
}

func (s *Server) tickerPrice(c *call) (any, *apiErr) {
	sym := c.params.Get("symbol")
	p, ok := s.prices[sym]
	if !ok || (spotMarket(sym) == nil && futMarket(sym) == nil) {
		return nil, reject(-1121, "Invalid symbol.")
	}
	return map[string]any{"symbol": sym, "price": p.StringFixed(8), "time": s.now()}, nil
}

func (s *Server) apiRestrictions(*call) (any, *apiErr) {
	r := s.restrictions
	return map[string]any{
		"ipRestrict": r.IPRestrict, "createTime": int64(1698645219000),
		"enableReading": r.EnableReading, "enableSpotAndMarginTrading": r.EnableSpotAndMarginTrading,
		"enableFutures": r.EnableFutures, "enableMargin": r.EnableMargin,
		"enableWithdrawals": r.EnableWithdrawals, "enableInternalTransfer": r.EnableInternalTransfer,
		"permitsUniversalTransfer": r.PermitsUniversalTransfer, "enableVanillaOptions": false,
		"enablePortfolioMarginTrading": false, "enableFixApiTrade": false, "enableFixReadOnly": false,
	}, nil
}

func (s *Server) spot(asset string) *balance {
	b := s.spotBal[asset]
	if b == nil {
		b = &balance{}
		s.spotBal[asset] = b
	}
	return b
}

func (s *Server) lev(symbol string) int {
	if l := s.leverage[symbol]; l > 0 {
		return l
	}
	return 20
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}
