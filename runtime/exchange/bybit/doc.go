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
// statusOf documents; the fee is cumExecFee in FeeAsset, which for a spot buy is the base
// coin (Bybit charges a spot buy's fee in what it buys).
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
// 10001 by its message (symbol, price, qty); rate limits (10006 and 10018 with RetryAfter
// to X-Bapi-Limit-Reset-Timestamp, HTTP 403 "access too frequent" with Bybit's 10 minutes,
// HTTP 429) RATE_LIMITED; no answer or 5xx after the retries EXCHANGE_ERROR wrapping
// exchange.ErrUnreachable; any other refusal EXCHANGE_ERROR with Bybit's retMsg and retCode.
// The one untyped failure is ErrOrderUnconfirmed (see there). Credentials never appear in an
// error: Bybit's messages are scrubbed of the key and secret, and the signed string Bybit
// echoes is cut off.
//
// # Files
//
// The Binance and Bybit adapters name their parts alike: connector.go: Connector and
// Account; client.go: the signed calls, their retries, the clock and the failures;
// account.go: balance, leverage and permissions; markets.go: markets and tickers;
// orders.go: placing, reading and cancelling orders; errors.go: Bybit's refusals as typed
// errors.
package bybit
