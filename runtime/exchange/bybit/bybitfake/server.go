// Package bybitfake is a local fake of the Bybit v5 REST API, for the adapter's tests: an
// httptest server that answers the endpoints the adapter uses the way Bybit does.
//
//   - Signing: the four X-BAPI headers and the HMAC-SHA256 signature over timestamp + key +
//     recvWindow + (raw query string | raw body) are checked with an implementation of its
//     own. An unknown key is retCode 10003, a wrong signature 10004 (whose message echoes the
//     signed string, key included, as Bybit's does), a timestamp outside
//     [server − recvWindow, server + 1000 ms) 10002; missing headers HTTP 401.
//   - Market data: /v5/market/time, instruments-info (spot and linear with realistic
//     filters, some instruments not Trading, linear paged with a cursor) and tickers.
//   - Account: one unified wallet (balances per coin, spot locks, linear positions with
//     margin and realised PnL), /v5/account/wallet-balance, /v5/user/query-api with
//     settable permissions per key, /v5/position/set-leverage (110043 when not modified).
//     Writes are refused (10005) to a read-only key, spot orders to a key without Spot
//     [SpotTrade], linear orders to one without ContractTrade [Order], leverage and mode
//     to one without ContractTrade [Position]; Derivatives [DerivativesTrade], on every
//     unified key (TradeOnly, SpotOnly), grants nothing.
//   - Position modes: per symbol, one-way (MergedSingle) by default, hedge (BothSides) on
//     USDT perpetuals only; SetPositionMode for tests, POST /v5/position/switch-mode as
//     Bybit takes it (by symbol: 110024 with a position, 110028 with open orders, 110025
//     unchanged, 110029 where hedge mode is not offered; by coin: the free symbols
//     switch). Orders must name the mode's positionIdx (0; or 1 long, 2 short), else 10001
//     "position idx not match position mode"; hedge-mode sides are kept apart, and an order
//     against its side's direction only closes. GET /v5/position/list answers by symbol
//     whether held or not (positionIdx per entry) and by settleCoin the held ones.
//   - Orders: /v5/order/create, cancel, realtime and history, by orderId and orderLinkId
//     (unique: 110072, spot 170141). Market orders fill at once at the symbol's price
//     (SetPrice); limit orders fill when marketable or when the price crosses them;
//     conditional orders (linear triggerPrice/triggerDirection, spot orderFilter StopOrder)
//     trigger on SetPrice. Spot orders answer basePrice and no lastPriceOnCreated, linear
//     the reverse, as Bybit does. The fee is 0.1%, reported in cumFeeDetail (and the
//     deprecated cumExecFee): a spot buy pays it in the base coin, a spot sell in the quote
//     coin, linear in the settle coin, or all in a third coin chosen with SetFeeCoin while
//     the wallet holds enough of it. Parameters Bybit documents as invalid are refused with
//     its codes: RULES.md lists them, rules_test.go sends each.
//   - Failure injection (FailNext): a retCode, HTTP 403 "access too frequent", a 5xx, a
//     delay (the request is still applied afterwards, as a slow exchange would), or dropping
//     the connection after applying the request; HoldNext holds a request in transit until
//     the test delivers it (late) or loses it. Counters: requests per path, orders created
//     per orderLinkId, answers per retCode.
package bybitfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange/fakehold"
	"github.com/sigops/sigops/runtime/exchange/fakekit"
)

// The default key of the account New makes: it may trade spot and linear, and move no funds.
const (
	APIKey    = "fake-bybit-key-0001"
	APISecret = "fake-bybit-secret-0001"
)

// FeeRate is the fee of every fill, maker and taker.
var FeeRate = decimal.RequireFromString("0.001")

// KeyInfo is what /v5/user/query-api reports of a key.
type KeyInfo struct {
	ReadOnly bool
	// Permissions by group, as Bybit lists them: ContractTrade [Order Position], Spot
	// [SpotTrade], Wallet [AccountTransfer SubMemberTransfer SubMemberTransferList
	// Withdraw], Derivatives [DerivativesTrade], Options, Exchange, ...
	Permissions map[string][]string
	// IPs the key is bound to; ["*"] or none: not bound.
	IPs []string
}

// TradeOnly is the default key's permissions: spot and contract trading, nothing else. Like
// every unified account's key it also lists Derivatives [DerivativesTrade], which Bybit
// adds by itself and which does not let a key trade contracts.
func TradeOnly() KeyInfo {
	return KeyInfo{Permissions: map[string][]string{
		"ContractTrade": {"Order", "Position"}, "Spot": {"SpotTrade"}, "Derivatives": {"DerivativesTrade"},
	}, IPs: []string{"*"}}
}

// SpotOnly is a unified account's key that may trade spot and no contracts: ContractTrade
// is empty, and Derivatives [DerivativesTrade] is there as on every unified key.
func SpotOnly() KeyInfo {
	return KeyInfo{Permissions: map[string][]string{
		"ContractTrade": {}, "Spot": {"SpotTrade"}, "Derivatives": {"DerivativesTrade"},
	}, IPs: []string{"*"}}
}

// Fault is a failure injected into the next matching requests.
type Fault struct {
	// Path limits the fault to one endpoint ("/v5/order/create"); empty: any request.
	Path string
	// RetCode answers HTTP 200 with this retCode (and RetMsg) without applying the request.
	// For 10006 the X-Bapi-Limit-Reset-Timestamp header is now + ResetIn (default 1 s).
	RetCode int
	RetMsg  string
	ResetIn time.Duration
	// HTTPStatus answers this status without applying the request: 403 is Bybit's IP rate
	// limit ("access too frequent"), 5xx a gateway failure.
	HTTPStatus int
	// Delay holds the request before handling it; it is applied afterwards even when the
	// client has given up.
	Delay time.Duration
	// DropAfterApply applies the request, then closes the connection without answering.
	DropAfterApply bool
	// Times is how many matching requests fail (0: one).
	Times int

	hold *Held // HoldNext
}

// Held is a request the fake holds in transit (HoldNext): sent, not answered, not yet seen
// by Bybit. Released, it arrives at that moment (its timestamp is checked against the recv
// window then, as Bybit checks it on arrival) and is handled: an order sent by a client that
// has since died or given up is applied late. Dropped, it is lost. The test decides when,
// which a Delay cannot (a lookup by another client must come first).
type Held = fakehold.Held

// HoldNext holds the next request to path until Release or Drop.
func (s *Server) HoldNext(path string) *Held {
	h := fakehold.New()
	s.FailNext(Fault{Path: path, hold: h})
	return h
}

type apiKey struct {
	secret string
	info   KeyInfo
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	ts        *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	now       func() time.Time
	keys      map[string]*apiKey
	faults    fakekit.Faults[Fault]
	calls     fakekit.Counts[string]
	answered  fakekit.Counts[int]
	pageLimit int

	prices    map[string]decimal.Decimal // symbol → last price
	wallet    map[string]*coin
	positions map[posKey]*position // linear symbol and positionIdx → position
	leverage  map[string]int       // linear symbol → leverage
	// Position modes (MergedSingle or BothSides): per symbol once set for it, else per
	// settle coin.
	symbolMode map[string]int
	coinMode   map[string]int
	// feeCoin, when set (SetFeeCoin), pays fees at feeCoinPrice quote per coin.
	feeCoin      string
	feeCoinPrice decimal.Decimal
	caller       string // the key of the request being handled (under mu)
	orders       []*order
	byID         map[string]*order
	byLink       map[string]*order
	created      map[string]int // orderLinkId → orders created
	forgotten    map[string]bool
	seq          int
}

// New starts a fake with the default key (APIKey, APISecret: TradeOnly), 10000 USDT, and
// prices BTCUSDT 50000, ETHUSDT 2500, DOGEUSDT 0.1, BTCPERP 50000.
func New() *Server {
	s := &Server{
		closing:    make(chan struct{}),
		now:        time.Now,
		keys:       map[string]*apiKey{APIKey: {secret: APISecret, info: TradeOnly()}},
		prices:     map[string]decimal.Decimal{},
		wallet:     map[string]*coin{},
		positions:  map[posKey]*position{},
		symbolMode: map[string]int{},
		coinMode:   map[string]int{},
		leverage:   map[string]int{},
		byID:       map[string]*order{},
		byLink:     map[string]*order{},
		created:    map[string]int{},
		forgotten:  map[string]bool{},
	}
	s.coin("USDT").balance = decimal.NewFromInt(10000)
	for sym, p := range map[string]string{"BTCUSDT": "50000", "ETHUSDT": "2500", "DOGEUSDT": "0.1", "BTCPERP": "50000"} {
		s.prices[sym] = decimal.RequireFromString(p)
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

// AddKey adds a key to the same account.
func (s *Server) AddKey(key, secret string, info KeyInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = &apiKey{secret: secret, info: info}
}

// SetPermissions sets what query-api reports of the default key (and what it may do: a
// read-only key cannot trade).
func (s *Server) SetPermissions(info KeyInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[APIKey].info = info
}

// SetBalance sets a coin's wallet balance.
func (s *Server) SetBalance(coin string, amount decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.coin(coin).balance = amount
}

// Balance is a coin's wallet balance.
func (s *Server) Balance(coin string) decimal.Decimal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coin(coin).balance
}

// SetNow sets the fake's clock (time.Now by default): the timestamps it checks requests
// against and stamps orders with.
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetFeeCoin makes fills pay their fee in coin, worth price quote each, while the wallet
// holds enough of it (as Bybit deducts fees in a third coin when the account chose so);
// "" goes back to Bybit's default coins.
func (s *Server) SetFeeCoin(coin string, price decimal.Decimal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feeCoin, s.feeCoinPrice = coin, price
}

// SetPageLimit caps the page size of linear instruments-info (0: Bybit's 1000).
func (s *Server) SetPageLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageLimit = n
}

// FailNext injects a fault into the next matching requests; faults queue in order.
func (s *Server) FailNext(f Fault) {
	s.faults.Arm(f, f.Times)
}

// Calls is how many requests reached path.
func (s *Server) Calls(path string) int {
	return s.calls.Get(path)
}

// Answered is how many answers carried retCode.
func (s *Server) Answered(retCode int) int {
	return s.answered.Get(retCode)
}

// OrdersCreated is how many orders were created with orderLinkId (never more than one).
func (s *Server) OrdersCreated(orderLinkID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[orderLinkID]
}

// OrderCount is how many orders exist.
func (s *Server) OrderCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders)
}

// ForgetClosed makes the finished orders so far invisible to /v5/order/realtime, as after a
// Bybit restart: they remain in /v5/order/history.
func (s *Server) ForgetClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.orders {
		if o.finished() {
			s.forgotten[o.id] = true
		}
	}
}

// takeFault pops the first fault for path.
func (s *Server) takeFault(path string) *Fault {
	f, ok := s.faults.Take(func(f Fault) bool { return f.Path == "" || f.Path == path })
	if !ok {
		return nil
	}
	return &f
}

// failure is an answer with a retCode other than 0.
type failure struct {
	code int
	msg  string
}

func fail(code int, format string, args ...any) *failure {
	return &failure{code: code, msg: fmt.Sprintf(format, args...)}
}

type route struct {
	method  string
	private bool
	handle  func(s *Server, q map[string]string, body []byte) (any, *failure)
}

var routes = map[string]route{
	"/v5/market/time":             {http.MethodGet, false, (*Server).serverTime},
	"/v5/market/instruments-info": {http.MethodGet, false, (*Server).instrumentsInfo},
	"/v5/market/tickers":          {http.MethodGet, false, (*Server).tickers},
	"/v5/account/wallet-balance":  {http.MethodGet, true, (*Server).walletBalance},
	"/v5/user/query-api":          {http.MethodGet, true, (*Server).queryAPI},
	"/v5/position/set-leverage":   {http.MethodPost, true, (*Server).setLeverage},
	"/v5/position/list":           {http.MethodGet, true, (*Server).positionList},
	"/v5/position/switch-mode":    {http.MethodPost, true, (*Server).switchMode},
	"/v5/order/create":            {http.MethodPost, true, (*Server).createOrder},
	"/v5/order/cancel":            {http.MethodPost, true, (*Server).cancelOrder},
	"/v5/order/realtime":          {http.MethodGet, true, (*Server).realtime},
	"/v5/order/history":           {http.MethodGet, true, (*Server).history},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	s.calls.Add(path)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	f := s.takeFault(path)
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
		if f.HTTPStatus == http.StatusForbidden {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "403, access too frequent")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.HTTPStatus)
		io.WriteString(w, fakekit.GatewayPage(f.HTTPStatus))
		return
	}
	rt, ok := routes[path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != rt.method {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var result any
	var ff *failure
	var key string
	if rt.private {
		key, ff = s.authenticate(r, body)
		if ff == nil && key == "" {
			s.write(w, http.StatusUnauthorized, nil, fail(10003, "missing authentication headers"), 0)
			return
		}
	}
	var resetAt int64
	if ff == nil && f != nil && f.RetCode != 0 {
		msg := f.RetMsg
		if msg == "" {
			msg = "injected failure"
		}
		ff = fail(f.RetCode, "%s", msg)
		if f.RetCode == 10006 {
			in := f.ResetIn
			if in <= 0 {
				in = time.Second
			}
			resetAt = s.now().Add(in).UnixMilli()
		}
	}
	if ff == nil {
		if rt.private && r.Method == http.MethodPost && !s.permitted(key, path, body) {
			ff = fail(10005, "Permission denied, please check your API key permissions.")
		} else {
			q := map[string]string{}
			for k, v := range r.URL.Query() {
				q[k] = v[0]
			}
			s.mu.Lock()
			s.caller = key
			result, ff = rt.handle(s, q, body)
			s.mu.Unlock()
		}
	}
	if f != nil && f.DropAfterApply {
		fakehold.HangUp(w)
		return
	}
	s.write(w, http.StatusOK, result, ff, resetAt)
}

// permitted reports whether key may make a write: a read-only key may not; spot orders need
// Spot [SpotTrade], linear orders ContractTrade [Order], leverage and position mode
// ContractTrade [Position]. A unified account's key carries Derivatives
// [DerivativesTrade] whatever else it holds, so that group grants nothing here.
func (s *Server) permitted(key, path string, body []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if k == nil || k.info.ReadOnly {
		return false
	}
	var r struct {
		Category string `json:"category"`
	}
	json.Unmarshal(body, &r)
	switch {
	case path == "/v5/position/set-leverage" || path == "/v5/position/switch-mode":
		return k.info.has("ContractTrade", "Position")
	case r.Category == "spot":
		return k.info.has("Spot", "SpotTrade")
	case r.Category == "linear":
		return k.info.has("ContractTrade", "Order")
	}
	return true
}

func (k KeyInfo) has(group, perm string) bool {
	for _, p := range k.Permissions[group] {
		if p == perm {
			return true
		}
	}
	return false
}

// authenticate checks the four headers and the signature like Bybit: it returns the key, or
// the failure to answer; an empty key with no failure means headers are missing.
func (s *Server) authenticate(r *http.Request, body []byte) (string, *failure) {
	key, sign, ts := r.Header.Get("X-BAPI-API-KEY"), r.Header.Get("X-BAPI-SIGN"), r.Header.Get("X-BAPI-TIMESTAMP")
	recv := r.Header.Get("X-BAPI-RECV-WINDOW")
	if key == "" || sign == "" || ts == "" {
		return "", nil
	}
	if recv == "" {
		recv = "5000"
	}
	s.mu.Lock()
	k := s.keys[key]
	now := s.now().UnixMilli()
	s.mu.Unlock()
	if k == nil {
		return "", fail(10003, "API key is invalid.")
	}
	t, err1 := strconv.ParseInt(ts, 10, 64)
	window, err2 := strconv.ParseInt(recv, 10, 64)
	if err1 != nil || err2 != nil || t < now-window || t >= now+1000 {
		return "", fail(10002, "invalid request, please check your server timestamp or recv_window param. req_timestamp[%s],server_timestamp[%d],recv_window[%s]", ts, now, recv)
	}
	payload := r.URL.RawQuery
	if r.Method == http.MethodPost {
		payload = string(body)
	}
	mac := hmac.New(sha256.New, []byte(k.secret))
	io.WriteString(mac, ts+key+recv+payload)
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(sign))) {
		return "", fail(10004, "error sign! origin_string[%s]", ts+key+recv+payload)
	}
	return key, nil
}

func (s *Server) write(w http.ResponseWriter, status int, result any, f *failure, resetAt int64) {
	s.mu.Lock()
	now := s.now().UnixMilli()
	code := 0
	if f != nil {
		code = f.code
	}
	s.answered.Add(code)
	s.mu.Unlock()
	env := map[string]any{"retCode": 0, "retMsg": "OK", "result": result, "retExtInfo": map[string]any{}, "time": now}
	if f != nil {
		env["retCode"], env["retMsg"], env["result"] = f.code, f.msg, map[string]any{}
	} else if result == nil {
		env["result"] = map[string]any{}
	}
	if resetAt == 0 {
		resetAt = now
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Bapi-Limit", "20")
	w.Header().Set("X-Bapi-Limit-Status", "19")
	w.Header().Set("X-Bapi-Limit-Reset-Timestamp", strconv.FormatInt(resetAt, 10))
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(env)
}

func (s *Server) serverTime(map[string]string, []byte) (any, *failure) {
	now := s.now()
	return map[string]string{"timeSecond": strconv.FormatInt(now.Unix(), 10),
		"timeNano": strconv.FormatInt(now.UnixNano(), 10)}, nil
}

func (s *Server) queryAPI(map[string]string, []byte) (any, *failure) {
	k := s.keys[s.caller]
	if k == nil {
		k = s.keys[APIKey]
	}
	perms := map[string][]string{}
	for _, g := range []string{"ContractTrade", "Spot", "Wallet", "Options", "Derivatives", "CopyTrading",
		"BlockTrade", "Exchange", "NFT", "Affiliate", "Earn"} {
		perms[g] = []string{}
	}
	for g, v := range k.info.Permissions {
		perms[g] = append([]string(nil), v...)
	}
	ips := k.info.IPs
	if len(ips) == 0 {
		ips = []string{"*"}
	}
	readOnly := 0
	if k.info.ReadOnly {
		readOnly = 1
	}
	return map[string]any{"id": "13770661", "note": "sigops", "apiKey": s.caller, "readOnly": readOnly,
		"secret": "", "permissions": perms, "ips": ips, "type": 1, "deadlineDay": 83,
		"expiredAt": "2026-12-31T00:00:00Z", "createdAt": "2026-01-01T00:00:00Z", "unified": 0, "uta": 1,
		"userID": 24617703, "inviterID": 0, "vipLevel": "No VIP", "mktMakerLevel": "0", "affiliateID": 0,
		"rsaPublicKey": "", "isMaster": true, "parentUid": "0", "kycLevel": "LEVEL_DEFAULT", "kycRegion": ""}, nil
}
