// Package okxfake is a local fake of the OKX v5 REST API, for the adapter's tests: an
// httptest server that answers the endpoints the adapter uses the way OKX does, and refuses
// what OKX refuses with OKX's code and message (RULES.md lists each rule with its source
// page; rules_test.go has one test per rule).
//
//   - Signing: the OK-ACCESS-KEY, -SIGN, -TIMESTAMP and -PASSPHRASE headers and the
//     base64 HMAC-SHA256 over timestamp + method + requestPath (with its query) + body are
//     checked with an implementation of its own; a timestamp more than 30 s from the fake's
//     clock is 50102, a wrong passphrase 50105, a wrong signature 50113, an unknown key
//     50111 (HTTP 401 each). A demo trading key (KeyInfo.Demo) must send
//     x-simulated-trading: 1, a production key must not (50101).
//   - expTime: a POST /api/v5/trade/order arriving after its expTime header is refused
//     unprocessed (50036).
//   - Market data: /api/v5/public/time, /api/v5/public/instruments (SPOT: BTC-USDT,
//     ETH-USDT; SWAP: BTC-USDT-SWAP ctVal 0.01 BTC, ETH-USDT-SWAP ctVal 0.1 ETH; plus
//     instruments the adapter must leave out: a suspended pair, an inverse swap, a
//     USDC-settled swap) and /api/v5/market/ticker at a settable price (SetPrice).
//   - Account: one trading account (cash balances per currency, spot locks, cross swap
//     positions with margin and realised PnL) in net_mode or long_short_mode
//     (SetPositionMode), /api/v5/account/balance, /config (posMode, perm, ip),
//     /positions, /set-leverage.
//   - Orders: /api/v5/trade/order (place and read), /cancel-order, /order-algo (place and
//     read, ordType conditional), /cancel-algos. Market orders fill at once at the price;
//     limit orders fill when marketable or when the price crosses them; conditional algo
//     orders trigger on SetPrice and place their order then. The fee is 0.1%, reported
//     negative as OKX reports a charge: a spot buy pays it in the base currency, a spot sell
//     and swaps in the quote.
//   - Failure injection (FailNext): a code, an HTTP status (429 is 50011, 5xx a gateway
//     failure), a delay (the request is still applied afterwards), or dropping the
//     connection after applying the request; HoldNext holds a request in transit until the
//     test delivers it (late) or loses it. Counters: requests per path, orders created per
//     clOrdId / algoClOrdId, answers per code.
package okxfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange/fakehold"
	"github.com/sigops/sigops/runtime/exchange/fakekit"
)

// The default key of the account New makes: it may trade, and move no funds.
const (
	APIKey     = "fake-okx-key-0001"
	APISecret  = "fake-okx-secret-0001"
	Passphrase = "fake-okx-passphrase-0001"
)

// TimestampWindow is how far OK-ACCESS-TIMESTAMP may be from the fake's clock.
const TimestampWindow = 30 * time.Second

// FeeRate is the fee of every fill, maker and taker.
var FeeRate = decimal.RequireFromString("0.001")

// Position modes of /api/v5/account/config's posMode.
const (
	NetMode       = "net_mode"
	LongShortMode = "long_short_mode"
)

// KeyInfo is what /api/v5/account/config reports of a key, and what the key may do.
type KeyInfo struct {
	// Perm: read_only, trade, withdraw (a key without trade cannot place or cancel).
	Perm []string
	// IP is the key's allow-list, comma-separated ("" when not bound).
	IP string
	// Demo makes a demo trading key: every request must carry x-simulated-trading: 1.
	Demo bool
}

// TradeOnly is the default key's permissions: read and trade, nothing else.
func TradeOnly() KeyInfo { return KeyInfo{Perm: []string{"read_only", "trade"}} }

func (k KeyInfo) has(perm string) bool {
	for _, p := range k.Perm {
		if p == perm {
			return true
		}
	}
	return false
}

// Fault is a failure injected into the next matching requests.
type Fault struct {
	// Path limits the fault to one endpoint ("/api/v5/trade/order"); empty: any request.
	// Method limits it to GET or POST; empty: either.
	Path, Method string
	// Code answers with this code (and Msg) without applying the request: on the order
	// endpoints a 51xxx code is the order's sCode under the batch code "1", as OKX reports
	// an order's refusal; any other code is the answer's own (50011 with HTTP 429).
	Code int
	Msg  string
	// HTTPStatus answers this status without applying the request: 429 is OKX's rate limit
	// (50011), 5xx a gateway failure.
	HTTPStatus int
	// Delay holds the request before handling it; it is applied afterwards even when the
	// client has given up.
	Delay time.Duration
	// DropAfterApply applies the request, then closes the connection without answering.
	DropAfterApply bool
	// Times is how many matching requests fail (0: one).
	Times int

	hold *Held
}

// Held is a request the fake holds in transit (HoldNext): sent, not answered, not yet seen
// by OKX. Released, it arrives at that moment (its timestamp and expTime are checked then,
// as OKX checks them on arrival) and is handled; dropped, it is lost.
type Held = fakehold.Held

// HoldNext holds the next request of method (empty: any) to path until Release or Drop.
func (s *Server) HoldNext(method, path string) *Held {
	h := fakehold.New()
	s.FailNext(Fault{Method: method, Path: path, hold: h})
	return h
}

type apiKey struct {
	secret, passphrase string
	info               KeyInfo
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	ts        *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	now      func() time.Time
	keys     map[string]*apiKey
	faults   fakekit.Faults[Fault]
	calls    fakekit.Counts[string]
	answered fakekit.Counts[int]

	posMode   string
	acctLv    string
	overrides map[string]instrument // instId → instrument with changed lots
	prices    map[string]decimal.Decimal
	coins     map[string]*coin
	positions map[string]*position // instId + "|" + posSide (net, long, short)
	leverage  map[string]int
	orders    []*order
	byOrdID   map[string]*order
	algos     []*algo
	created   map[string]int // clOrdId / algoClOrdId → orders created
	seq       int
}

// New starts a fake in net mode with the default key (APIKey, APISecret, Passphrase:
// TradeOnly), 10000 USDT, and prices BTC-USDT 50000 and ETH-USDT 2500 (spot and swaps).
func New() *Server {
	s := &Server{
		closing:   make(chan struct{}),
		now:       time.Now,
		keys:      map[string]*apiKey{APIKey: {secret: APISecret, passphrase: Passphrase, info: TradeOnly()}},
		posMode:   NetMode,
		acctLv:    "2",
		overrides: map[string]instrument{},
		prices:    map[string]decimal.Decimal{},
		coins:     map[string]*coin{},
		positions: map[string]*position{},
		leverage:  map[string]int{},
		byOrdID:   map[string]*order{},
		created:   map[string]int{},
	}
	s.coin("USDT").cash = decimal.NewFromInt(10000)
	for pair, p := range map[string]string{"BTC-USDT": "50000", "ETH-USDT": "2500", "OLD-USDT": "1"} {
		s.prices[pair] = decimal.RequireFromString(p)
	}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL (Endpoints.Spot).
func (s *Server) URL() string { return s.ts.URL }

// Close stops the server, waiting for requests in flight (delayed ones included; held ones
// are lost).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.ts.Close()
}

// SetClock replaces the fake's clock (its timestamps, expTime checks and fills).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// AddKey adds a key to the same account.
func (s *Server) AddKey(key, secret, passphrase string, info KeyInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = &apiKey{secret: secret, passphrase: passphrase, info: info}
}

// SetPermissions sets what the default key may do and what /config reports of it.
func (s *Server) SetPermissions(info KeyInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[APIKey].info = info
}

// SetPositionMode switches the account's posMode (NetMode or LongShortMode) at once,
// whatever it holds: a test's way to change the mode behind the adapter's back.
func (s *Server) SetPositionMode(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posMode = mode
}

// SetLot changes an instrument's lotSz and minSz (contracts on swaps).
func (s *Server) SetLot(instID, lotSz, minSz string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instrument(instID)
	if in == nil {
		panic("okxfake: unknown instrument " + instID)
	}
	c := *in
	c.lotSz, c.minSz = lotSz, minSz
	s.overrides[instID] = c
}

// SetBalance sets a currency's cash balance.
func (s *Server) SetBalance(ccy string, amount decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.coin(ccy).cash = amount
}

// Balance is a currency's cash balance.
func (s *Server) Balance(ccy string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coin(ccy).cash
}

// FailNext injects a fault into the next matching requests; faults queue in order.
func (s *Server) FailNext(f Fault) {
	s.faults.Arm(f, f.Times)
}

// Calls is how many requests reached path; "POST /api/v5/trade/order" counts one method.
func (s *Server) Calls(path string) int {
	return s.calls.Get(path)
}

// Answered is how many answers carried code (an answer's code, or an order's sCode).
func (s *Server) Answered(code int) int {
	return s.answered.Get(code)
}

// OrdersCreated is how many orders (algo orders included) were created with a clOrdId or
// algoClOrdId.
func (s *Server) OrdersCreated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[id]
}

// OrderCount is how many orders and algo orders exist.
func (s *Server) OrderCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders) + len(s.algos)
}

func (s *Server) takeFault(method, path string) *Fault {
	f, ok := s.faults.Take(func(f Fault) bool {
		return (f.Path == "" || f.Path == path) && (f.Method == "" || f.Method == method)
	})
	if !ok {
		return nil
	}
	return &f
}

// failure is an answer with a code other than 0. item reports it as the order's sCode
// under the batch code "1" (trade endpoints); otherwise it is the answer's code, with
// HTTP status status (200 when 0).
type failure struct {
	code   int
	msg    string
	status int
	item   bool
	ids    map[string]string // clOrdId, ordId, algoId, algoClOrdId of the refused order
}

func fail(code int, format string, args ...any) *failure {
	return &failure{code: code, msg: fmt.Sprintf(format, args...)}
}

// refuse is an order's refusal: sCode under the batch code "1".
func refuse(code int, format string, args ...any) *failure {
	return &failure{code: code, msg: fmt.Sprintf(format, args...), item: true}
}

// badParam is OKX's 51000 "Parameter {param0} error" (HTTP 400).
func badParam(name string) *failure {
	return &failure{code: 51000, msg: "Parameter " + name + " error", status: http.StatusBadRequest}
}

// emptyParam is OKX's 50014 "Parameter {param0} can not be empty" (HTTP 400).
func emptyParam(name string) *failure {
	return &failure{code: 50014, msg: "Parameter " + name + " can not be empty", status: http.StatusBadRequest}
}

// authFail is an authentication refusal (HTTP 401).
func authFail(code int, msg string) *failure {
	return &failure{code: code, msg: msg, status: http.StatusUnauthorized}
}

// handler answers one request: query is the GET parameters, body the POST body.
type handler func(s *Server, q map[string]string, body []byte) (any, *failure)

type route struct {
	method  string
	private bool
	trade   bool     // needs the trade permission
	params  []string // the parameters the page lists (query for GET, body keys for POST)
	handle  handler
}

var routes = map[string]route{
	"/api/v5/public/time":        {http.MethodGet, false, false, nil, (*Server).serverTime},
	"/api/v5/public/instruments": {http.MethodGet, false, false, []string{"instType", "uly", "instFamily", "instId"}, (*Server).instrumentsList},
	"/api/v5/market/ticker":      {http.MethodGet, false, false, []string{"instId"}, (*Server).ticker},
	"/api/v5/account/balance":    {http.MethodGet, true, false, []string{"ccy"}, (*Server).balance},
	"/api/v5/account/config":     {http.MethodGet, true, false, nil, (*Server).config},
	"/api/v5/account/positions":  {http.MethodGet, true, false, []string{"instType", "instId", "posId"}, (*Server).positionsList},
	"/api/v5/account/set-leverage": {http.MethodPost, true, true,
		[]string{"instId", "ccy", "lever", "mgnMode", "posSide"}, (*Server).setLeverage},
	"/api/v5/trade/order": {http.MethodPost, true, true, []string{"instId", "tdMode", "ccy", "clOrdId", "tag", "side",
		"posSide", "ordType", "sz", "px", "pxUsd", "pxVol", "reduceOnly", "tgtCcy", "banAmend", "quickMgnType", "stpId",
		"stpMode", "tradeQuoteCcy", "attachAlgoOrds"}, (*Server).placeOrder},
	"/api/v5/trade/cancel-order": {http.MethodPost, true, true, []string{"instId", "ordId", "clOrdId"}, (*Server).cancelOrder},
	"/api/v5/trade/order-algo": {http.MethodPost, true, true, []string{"instId", "tdMode", "ccy", "side", "posSide",
		"ordType", "sz", "tag", "tgtCcy", "algoClOrdId", "closeFraction", "reduceOnly", "quickMgnType", "tpTriggerPx",
		"tpTriggerPxType", "tpOrdPx", "tpOrdKind", "slTriggerPx", "slTriggerPxType", "slOrdPx", "cxlOnClosePos",
		"tradeQuoteCcy"}, (*Server).placeAlgo},
	"/api/v5/trade/cancel-algos": {http.MethodPost, true, true, []string{"algoId", "instId"}, (*Server).cancelAlgos},
}

// getRoutes are the GET forms of paths that also take POST.
var getRoutes = map[string]route{
	"/api/v5/trade/order":      {http.MethodGet, true, false, []string{"instId", "ordId", "clOrdId"}, (*Server).getOrder},
	"/api/v5/trade/order-algo": {http.MethodGet, true, false, []string{"algoId", "algoClOrdId"}, (*Server).getAlgo},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	s.calls.Add(path, r.Method+" "+path)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	f := s.takeFault(r.Method, path)
	if f != nil && f.hold != nil {
		defer f.hold.Done()
		if !f.hold.Hold(w, s.closing) {
			return
		}
	}
	if f != nil && f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if f != nil && f.HTTPStatus != 0 {
		if f.HTTPStatus == http.StatusTooManyRequests {
			s.write(w, nil, &failure{code: 50011, msg: "Too Many Requests", status: http.StatusTooManyRequests})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.HTTPStatus)
		io.WriteString(w, fakekit.GatewayPage(f.HTTPStatus))
		return
	}
	rt, ok := routes[path]
	if g, isGet := getRoutes[path]; isGet && r.Method == http.MethodGet {
		rt, ok = g, true
	}
	if !ok {
		s.write(w, nil, &failure{code: 50005, msg: "API endpoint is inactive or unavailable.", status: http.StatusGone})
		return
	}
	if r.Method != rt.method {
		s.write(w, nil, &failure{code: 50115, msg: "Invalid request method.", status: http.StatusMethodNotAllowed})
		return
	}
	var ff *failure
	var key *apiKey
	if rt.private {
		key, ff = s.authenticate(r, body)
	}
	if ff == nil && path == "/api/v5/trade/order" && r.Method == http.MethodPost {
		ff = s.checkExpTime(r)
	}
	if ff == nil && rt.trade && !key.info.has("trade") {
		ff = fail(50120, "This API key doesn't have permission to use this function")
	}
	if ff == nil && f != nil && f.Code != 0 {
		msg := f.Msg
		if msg == "" {
			msg = "injected failure"
		}
		ff = &failure{code: f.Code, msg: msg, item: f.Code >= 51000 && rt.trade}
		if f.Code == 50011 {
			ff.status = http.StatusTooManyRequests
		}
	}
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	if ff == nil {
		ff = checkParams(rt, q, body)
	}
	var result any
	if ff == nil {
		s.mu.Lock()
		result, ff = rt.handle(s, q, body)
		s.mu.Unlock()
	}
	if f != nil && f.DropAfterApply {
		fakehold.HangUp(w)
		return
	}
	s.write(w, result, ff)
}

// checkParams refuses a parameter the endpoint's page does not list (51000 "Parameter
// {param0} error"), and a POST body that is not JSON (50002).
func checkParams(rt route, q map[string]string, body []byte) *failure {
	allowed := map[string]bool{}
	for _, p := range rt.params {
		allowed[p] = true
	}
	if rt.method == http.MethodGet {
		for k := range q {
			if !allowed[k] {
				return badParam(k)
			}
		}
		return nil
	}
	var objs []map[string]json.RawMessage
	if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
		if err := json.Unmarshal(body, &objs); err != nil {
			return &failure{code: 50002, msg: "JSON syntax error", status: http.StatusBadRequest}
		}
	} else {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(body, &one); err != nil {
			if len(body) == 0 {
				return &failure{code: 50000, msg: "Body for POST request cannot be empty.", status: http.StatusBadRequest}
			}
			return &failure{code: 50002, msg: "JSON syntax error", status: http.StatusBadRequest}
		}
		objs = append(objs, one)
	}
	for _, o := range objs {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !allowed[k] {
				return badParam(k)
			}
		}
	}
	return nil
}

// authenticate checks the headers and the signature as OKX does and returns the key.
func (s *Server) authenticate(r *http.Request, body []byte) (*apiKey, *failure) {
	key, sign := r.Header.Get("OK-ACCESS-KEY"), r.Header.Get("OK-ACCESS-SIGN")
	ts, pass := r.Header.Get("OK-ACCESS-TIMESTAMP"), r.Header.Get("OK-ACCESS-PASSPHRASE")
	switch {
	case key == "":
		return nil, authFail(50103, `Request header "OK-ACCESS-KEY" cannot be empty.`)
	case pass == "":
		return nil, authFail(50104, `Request header "OK-ACCESS-PASSPHRASE" cannot be empty.`)
	case sign == "":
		return nil, authFail(50106, `Request header "OK-ACCESS-SIGN" cannot be empty.`)
	case ts == "":
		return nil, authFail(50107, `Request header "OK-ACCESS-TIMESTAMP" cannot be empty.`)
	}
	s.mu.Lock()
	k := s.keys[key]
	now := s.now()
	s.mu.Unlock()
	if k == nil {
		return nil, authFail(50111, "Invalid OK-ACCESS-KEY.")
	}
	t, err := time.Parse("2006-01-02T15:04:05.000Z", ts)
	if err != nil {
		return nil, authFail(50112, "Invalid OK-ACCESS-TIMESTAMP.")
	}
	if d := now.Sub(t); d > TimestampWindow || d < -TimestampWindow {
		return nil, authFail(50102, "Timestamp request expired.")
	}
	if pass != k.passphrase {
		return nil, authFail(50105, `Request header "OK-ACCESS-PASSPHRASE" incorrect.`)
	}
	if (r.Header.Get("x-simulated-trading") == "1") != k.info.Demo {
		return nil, authFail(50101, "APIKey does not match current environment.")
	}
	target := r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	mac := hmac.New(sha256.New, []byte(k.secret))
	io.WriteString(mac, ts+r.Method+target+string(body))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sign)) {
		return nil, authFail(50113, "Invalid signature.")
	}
	return k, nil
}

// checkExpTime refuses a request that arrives after its expTime header (ms).
func (s *Server) checkExpTime(r *http.Request) *failure {
	v := r.Header.Get("expTime")
	if v == "" {
		return nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return badParam("expTime")
	}
	s.mu.Lock()
	now := s.now().UnixMilli()
	s.mu.Unlock()
	if now > ms {
		return fail(50036, "The expTime can't be earlier than the current system time. Please adjust the expTime and try again.")
	}
	return nil
}

func (s *Server) write(w http.ResponseWriter, result any, f *failure) {
	s.mu.Lock()
	code := 0
	if f != nil {
		code = f.code
	}
	s.answered.Add(code)
	s.mu.Unlock()
	status := http.StatusOK
	env := map[string]any{"code": "0", "msg": "", "data": result}
	switch {
	case f != nil && f.item:
		it := map[string]any{"clOrdId": "", "ordId": "", "tag": "", "sCode": strconv.Itoa(f.code), "sMsg": f.msg}
		for k, v := range f.ids {
			it[k] = v
		}
		env = map[string]any{"code": "1", "msg": "All operations failed", "data": []any{it}}
	case f != nil:
		env = map[string]any{"code": strconv.Itoa(f.code), "msg": f.msg, "data": []any{}}
		if f.status != 0 {
			status = f.status
		}
	case result == nil:
		env["data"] = []any{}
	}
	now := time.Now().UnixMicro()
	env["inTime"], env["outTime"] = strconv.FormatInt(now, 10), strconv.FormatInt(now, 10)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(env)
}

func (s *Server) serverTime(map[string]string, []byte) (any, *failure) {
	return []map[string]string{{"ts": strconv.FormatInt(s.now().UnixMilli(), 10)}}, nil
}

func (s *Server) config(map[string]string, []byte) (any, *failure) {
	k := s.keys[APIKey]
	return []map[string]any{{"uid": "44705892343619584", "mainUid": "44705892343619584", "acctLv": s.acctLv,
		"acctStpMode": "cancel_maker", "posMode": s.posMode, "autoLoan": false, "greeksType": "PA", "level": "Lv1",
		"levelTmp": "", "ctIsoMode": "automatic", "mgnIsoMode": "automatic", "spotOffsetType": "", "roleType": "0",
		"traderInsts": []string{}, "spotRoleType": "0", "spotTraderInsts": []string{}, "opAuth": "0", "kycLv": "2",
		"label": "sigops", "ip": k.info.IP, "perm": strings.Join(k.info.Perm, ","), "liquidationGear": "-1",
		"enableSpotBorrow": false, "spotBorrowAutoRepay": false, "type": "0"}}, nil
}
