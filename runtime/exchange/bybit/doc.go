// Package bybit is the Bybit v5 adapter: exchange.Connector (Name "bybit") and
// exchange.Live for a unified trading account, spot and linear (USDT/USDC) perpetuals.
// bybitfake beside it is a local fake of the endpoints used, for tests.
//
// # Client: our own, not a library
//
// Two Go clients of the v5 API exist on the module proxy and were weighed:
//
//   - github.com/hirokisan/bybit/v2 (v2.36.0, November 2024) covers order/create with
//     takeProfit/stopLoss, wallet-balance, instruments-info and query-api, but its calls take
//     no context.Context (requests are built with http.NewRequest), so the spec's 2000 ms
//     bound per exchange call and the caller's cancellation cannot reach a request; HTTP 403
//     and 5xx come back as generic errors without the body or the rate-limit headers
//     (X-Bapi-Limit-Reset-Timestamp), and it carries the retired v1/v3 APIs alongside v5.
//   - github.com/bybit-exchange/bybit.go.api (the exchange's own) is published only as
//     untagged pseudo-versions, takes parameters as map[string]interface{} and returns the
//     result as interface{} (numbers and decimals decoded by hand afterwards), drops response
//     headers on errors, and pulls in go-simplejson and json-iterator.
//
// sigops needs a handful of endpoints and needs them exactly: every call bounded by a
// context, quantities and prices as the exact decimal strings of shopspring/decimal (never a
// float on the way in or out), the retCode of every refusal (to map it to the spec's codes
// and to tell "refused" from "outcome unknown", which decides whether an order may be sent
// again), the rate-limit reset header, the signature computed over exactly the bytes sent,
// and error messages scrubbed of the key (Bybit echoes the signed string, key included, in
// a 10004 answer). That is about 300 lines of client (client.go), so the adapter has its
// own and no new dependency; golang.org/x/sync/singleflight (already required) deduplicates
// instrument fetches.
//
// # Requests
//
// Signed requests carry X-BAPI-API-KEY, X-BAPI-TIMESTAMP, X-BAPI-RECV-WINDOW
// (Connector.RecvWindow, 5000 ms by default) and X-BAPI-SIGN = hex HMAC-SHA256(secret,
// timestamp + key + recvWindow + payload), the payload being the query string of a GET or
// the JSON body of a POST as sent (Sign). A timestamp
// Bybit refuses (10002) makes the client learn Bybit's clock (/v5/market/time) and send the
// request once more; the offset is kept per host.
//
// Every Exchange call is bounded by Connector.Timeout (DefaultTimeout, 2 s: the spec's
// "exchange call up to 2000 ms"), retries included. Reads (and the idempotent writes
// set-leverage and cancel) are retried on no answer, 5xx and Bybit's back-end time-out codes
// (10000, 10016, 170001, 170007, 170032, 170146): at most 3 attempts, backoff 100, 200 ms,
// each attempt capped at 60% of the budget. order/create is never retried blindly; see
// Account.PlaceOrder.
//
// Endpoints: the base URL is Endpoints.Spot, else https://api-testnet.bybit.com when
// Endpoints.Testnet, else https://api.bybit.com; linear calls use Endpoints.Futures when set
// (Bybit serves both categories from one host).
//
// # Markets
//
// /v5/market/instruments-info?category=spot|linear (every page), instruments in status
// Trading (linear: contractType LinearPerpetual), cached per host for MarketsTTL (5 min),
// concurrent refreshes deduplicated, the older list used if a refresh fails. MarketInfo:
// TickSize priceFilter.tickSize; StepSize lotSizeFilter.basePrecision (spot) or qtyStep
// (linear); MinQty minOrderQty; MinNotional minOrderAmt (spot) or minNotionalValue (linear).
// Symbols are BASE/QUOTE from baseCoin and quoteCoin; Bybit's own spelling (BTCUSDT) is
// accepted as input too.
//
// # Orders
//
// orderLinkId is the ClientOrderID when it fits Bybit's rule (at most 36 characters of
// [A-Za-z0-9_-], which the executor's "sg-" + 32 hex digits do), else a stable hash of it
// (LinkID). Amounts are base-currency quantities on both categories: spot market orders are
// sent with marketUnit=baseCoin. stop_loss and take_profit are conditional orders (spot:
// orderFilter StopOrder; linear: triggerDirection, reduceOnly, closeOnTrigger); take-profit
// and stop-loss fields attached to an entry are not used (see PlaceOrder). Statuses map as
// statusOf documents.
//
// Read back without the request (GetOrder, CancelOrder), a conditional order's type comes
// from its direction: triggerDirection on linear; spot answers neither triggerDirection (a
// linear and inverse parameter) nor lastPriceOnCreated (which the order pages leave out for
// spot), so its trigger is compared with basePrice, the last price when it was placed,
// which spot alone answers (typeOf).
//
// Fees come from cumFeeDetail (coin → fee), which the order pages give for spot and linear
// in place of cumExecFee, deprecated there; cumExecFee is read only from an answer without
// cumFeeDetail, and is then taken to be in the coin Bybit charges by default (the base coin
// of a spot buy, the quote coin of a spot sell, the settle coin of linear), as it names
// none. Order.Fee and FeeAsset follow the Binance adapter's rules: a fee in one coin is
// reported in that coin (a spot buy's base coin, which the executor takes off the holding;
// a third coin such as MNT, which it does not count against PnL); fees in several coins are
// reported in the quote (settle) coin, the base coin's converted at the average price and a
// third coin's left out (feeOf).
//
// # Position modes
//
// Bybit keeps a position mode per linear symbol: one-way (positionIdx 0) or hedge (a long,
// positionIdx 1, and a short, 2, side by side), hedge being offered on USDT perpetuals only;
// a switch for the whole settle coin leaves the symbols that hold positions or orders as
// they were. No endpoint reads a mode, so it is read from /v5/position/list: with a symbol,
// Bybit lists that symbol's positions whether held or not, one entry with positionIdx 0 in
// one-way mode and two (1 and 2) in hedge mode.
//
// The Account keeps each symbol's mode (connectors.Clients keeps Accounts per connection):
// read before the symbol's first linear order, used for Connector.ModeTTL (DefaultModeTTL,
// 60 s), then read again. In hedge mode an order names the position it acts on: positionIdx
// 1 for the long (buying to open, selling to exit: exchange.OrderRequest.HedgeLong), 2 for
// the short; every exit (reduce-only orders, stop-loss and take-profit) is sent with
// reduceOnly, which Bybit takes in both modes and asks for whenever an order closes or
// reduces a position. When Bybit answers 10001 "position idx not match position mode" the
// mode changed since it was read: every mode read is dropped, and the order is refused with
// EXCHANGE_ERROR saying the account's position mode changed; it is never sent again in the
// other mode within the same call (the caller sized it for a position that may not be the
// one it would now act on). The next order reads the mode again.
//
// AccountMode (exchange.ModeReader) reads the USDT positions (settleCoin=USDT; USDC
// contracts are one-way only): OpenPositions counts those held, each side apart, and Mode
// is Hedge when any of them is a hedge-mode position. Bybit lists only held positions by
// settle coin; with none held, the mode is BTCUSDT's, which follows the settle coin's.
//
// # Permissions
//
// /v5/user/query-api lists a key's permissions by group. Futures trading is ContractTrade
// [Order, Position], the contract-trading permission (USDT contracts): Order places and
// cancels, Position sets leverage, which every leveraged entry does first. Derivatives
// [DerivativesTrade] is no contract permission: Bybit adds it to every unified account's key
// by itself. Spot trading is Spot [SpotTrade]; a read-only key trades nothing; Wallet
// [Withdraw] and [AccountTransfer, SubMemberTransfer, SubMemberTransferList] are reported
// so that sigops refuses keys that move funds (Account.Permissions).
//
// A create that got no answer may still be executed until its recv window is over.
// RequestWindow (Timeout + RecvWindow + ClockMargin, 8 s by default) bounds that from the
// start of the PlaceOrder call; a caller that died mid-call, or retries from another
// process, must not place again before it has passed (the executor waits it out).
//
// # Errors
//
// Failures are *errs.Error with the spec's codes, from the retCode (HTTP 200 answers) or the
// HTTP status: refused key (10003, 10004, 10007, 10010, 33004, -2015, HTTP 401)
// EXCHANGE_DISCONNECTED wrapping exchange.ErrInvalidCredentials; key without the permission
// (10005, ...) EXCHANGE_DISCONNECTED; insufficient balance (110004, 110007, 110012, 110044,
// 110045, 170131, ...) INSUFFICIENT_BALANCE with details asset, available and (estimated)
// required; quantity, precision and minimums (110017, 110094, 170135-170137, 170140,
// 170124, ...) INVALID_AMOUNT; price (110003, 110092, 110093, 170132-170134, ...)
// INVALID_PRICE; symbol (170121, 10029, ...) INVALID_SYMBOL; the generic parameter error
// 10001 by its message (symbol, price, qty; "position idx not match position mode" is the
// EXCHANGE_ERROR of a changed position mode, above); rate limits (10006 and 10018 with RetryAfter
// to X-Bapi-Limit-Reset-Timestamp, HTTP 403 "access too frequent" with Bybit's 10 minutes,
// HTTP 429) RATE_LIMITED; no answer or 5xx after the retries EXCHANGE_ERROR wrapping
// exchange.ErrUnreachable; any other refusal EXCHANGE_ERROR with Bybit's retMsg and retCode.
// The one untyped failure is ErrOrderUnconfirmed (see there). Credentials never appear in an
// error: Bybit's messages are scrubbed of the key and secret, and the signed string Bybit
// echoes is cut off.
//
// # Refused before sending
//
// exchange.OrderRequest.Validate's rules, and a futures stop_loss or take_profit without an
// amount (the adapter sends no whole-position close); a symbol that instruments-info does
// not list as Trading (linear: perpetuals only) is INVALID_SYMBOL, a leverage outside 1 to
// the instrument's maxLeverage INVALID_AMOUNT. A client order ID Bybit would refuse as
// orderLinkId is not refused but replaced by LinkID's stable hash.
//
// # The fake
//
// bybitfake refuses what Bybit documents as invalid, with Bybit's retCode and retMsg:
// bybitfake/RULES.md lists each rule with the v5 page it follows, and
// bybitfake/rules_test.go sends each bad request. conformance_test.go pins every request the
// adapter sends (method, path, the exact parameters, the X-BAPI headers and the signed
// string) against the v5 page it follows.
//
// # Files
//
// The Binance and Bybit adapters name their parts alike: connector.go: Connector and
// Account; client.go: the signed calls, their retries, the clock and the failures;
// account.go: balance, leverage and permissions; mode.go: position modes; markets.go:
// markets and tickers; orders.go: placing, reading and cancelling orders; errors.go:
// Bybit's refusals as typed errors.
//
// What this adapter and the OKX adapter do alike lives once in restkit: the decimal strings
// (num), the instruments cache, the clock offsets per host, the retry loop of a call, the
// pooled HTTP client and base URLs, and the typed errors of an unreachable host and of a
// short balance.
package bybit
