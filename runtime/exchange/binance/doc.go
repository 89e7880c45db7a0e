// Package binance is the live Binance adapter: spot and USDⓈ-M futures (linear
// perpetuals) behind exchange.Connector / exchange.Live, built on
// github.com/adshao/go-binance/v2 (v2.8.7). binancefake is the in-process Binance its tests
// run against; no test calls a real Binance host.
//
// # Connection
//
// Connector{}.Connect(creds, endpoints) makes no network call. Base URLs come from
// Endpoints.Spot / Endpoints.Futures, else production (api.binance.com, fapi.binance.com),
// or with Endpoints.Testnet Binance Demo Trading: https://demo-api.binance.com for spot (the
// spot API docs' "Demo Mode" page) and https://demo-fapi.binance.com for USDⓈ-M futures (the
// demo URL of Binance's own connectors), where Binance now sends API users instead of the
// older spot and futures testnets (testnet.binance.vision, testnet.binancefuture.com, which
// stay reachable through Endpoints.Spot / Endpoints.Futures). A demo API key, made on
// demo.binance.com, serves both markets as a production key does. Every HTTP call is
// bounded by Timeout (2 s, the spec's "exchange call up to 2000 ms"); every method, retries
// included, by MaxElapsed (6 s); signed requests carry recvWindow 5000 ms. One account
// serves both markets; Balance reads the spot wallet unless the account was opened with
// ForKind(exchange.Futures), which reads the futures wallet's availableBalance (the caller
// that opens a futures bot's account must use it).
//
// # Errors
//
// Every answer of Binance that refuses a request is an *errs.Error with the spec's code,
// Binance's code in Details["binanceCode"] and Binance's message in Message:
//
//	insufficient balance/margin (-2010 "…insufficient balance…", -2018, -2019, -4050, -4051)
//	    → INSUFFICIENT_BALANCE, Details required/available/asset (available read from the
//	      wallet; required = amount × price + fee estimate, futures amount × price / leverage
//	      + fee; a spot sell requires the base amount)
//	"Filter failure: LOT_SIZE|MARKET_LOT_SIZE|NOTIONAL|MIN_NOTIONAL", -1111 on quantity,
//	    -4003 -4004 -4005 -4023 -4164, -4028 (leverage)          → INVALID_AMOUNT
//	"Filter failure: PRICE_FILTER|PERCENT_PRICE…", -1111 on price,
//	    -4001 -4002 -4006 -4007 -4013 -4014 -4016 -4024, -2021,
//	    -2010 "Stop price would trigger immediately."              → INVALID_PRICE
//	-1121, -1122                                                → INVALID_SYMBOL
//	-2022 (reduce-only with nothing to reduce)                  → POSITION_NOT_FOUND
//	HTTP 401, -1002, -1022, -2014, -2015                        → EXCHANGE_DISCONNECTED,
//	    wrapping exchange.ErrInvalidCredentials
//	HTTP 429/418, -1003, -1015 → RATE_LIMITED with RetryAfter from Retry-After (not retried)
//	-4061, and -1106 for reduceonly → EXCHANGE_ERROR saying the account's position mode
//	    changed (see Position modes)
//	-1021 → the clock offset is re-synced (GET …/time) and the request sent once more; a
//	    second refusal is EXCHANGE_ERROR
//	anything else → EXCHANGE_ERROR with Binance's message
//
// A call without an answer (time-out, connection error, HTTP 5xx: Binance documents the
// outcome of a 5xx as unknown) is retried with exponential back-off (Attempts 3, Backoff
// 100 ms doubling, ±10 %, within MaxElapsed) when it changes nothing; a read that still gets
// no answer is EXCHANGE_ERROR wrapping exchange.ErrUnreachable.
//
// # Never a duplicate order
//
// PlaceOrder looks the client ID up before placing and places only on -2013 "Order does not
// exist."; a duplicate-ID refusal (spot -2010 "Duplicate order sent.", futures -4116)
// returns the existing order; concurrent placements of one ID in a process are serialised.
// A place without an answer is never blindly repeated: the order is looked up, and a new
// request is sent only once the lost one can no longer execute (its timestamp + recvWindow +
// ClockMargin: Binance refuses older requests), waiting for that if MaxElapsed allows. If it
// does not, or the lookups get no answer either, the error is deliberately untyped (wrapping
// exchange.ErrUnreachable): the outcome is unknown, which the executor must treat as "look it
// up again later", never as a rejection. GetOrder and CancelOrder also answer "no answer"
// untyped. The in-flight window is known only to the process that sent the request: a caller
// that retries from another process (or after its own process died) must not place again
// before RequestWindow (MaxElapsed + RecvWindow + ClockMargin, 12 s) has passed since the
// PlaceOrder call began; the executor does so with the send time it stores.
// Binance only refuses a client ID held by an *open* order, which is why the lookup comes
// first; Binance forgets futures orders after 90 days (3 for cancelled orders without
// fills), so the guarantee holds within that horizon.
//
// # Orders
//
// Market and limit (GTC) orders on both markets, amounts and prices sent as decimal strings
// exactly as given (never floats; no rounding: the executor rounds to the filters from
// Markets, decision 6 in docs/decisions.md); reduceOnly on futures exits (one-way mode); an
// opening futures order first sets the symbol's leverage to OrderRequest.Leverage (once per
// account and value). stop_loss / take_profit: on spot STOP_LOSS / TAKE_PROFIT (…_LIMIT when
// a Price is given); on futures conditional orders of the Algo Order API.
//
// The algo-order gap: since 2025-12 Binance refuses STOP_MARKET, TAKE_PROFIT_MARKET, STOP,
// TAKE_PROFIT and TRAILING_STOP_MARKET on POST /fapi/v1/order (-4120 "Order type not
// supported for this endpoint. Please use the Algo Order API endpoints instead.") and takes
// them on POST/GET/DELETE /fapi/v1/algoOrder (algoType CONDITIONAL, type, triggerPrice,
// quantity (+ reduceOnly in one-way mode) or closePosition, positionSide in hedge mode,
// clientAlgoId, workingType). go-binance v2.8.7 has no service for it, so algo.go signs
// those requests itself (HMAC-SHA256 of the exact payload, X-MBX-APIKEY). Conditional
// futures orders always exit (reduce-only, or by their side in hedge mode; Amount zero:
// closePosition, the whole position, with STOP_MARKET or TAKE_PROFIT_MARKET only), trigger
// on the last price (CONTRACT_PRICE), and their Order.ID is "algo-<algoId>"; once
// triggered, status and fills are those of the order they placed (actualOrderId).
// Assumptions to confirm on the testnet: an unknown clientAlgoId is -2013 and a duplicate
// one -4116, like regular orders.
//
// Statuses: NEW and PENDING_CANCEL → open, PARTIALLY_FILLED → partially_filled, FILLED →
// filled, CANCELED → cancelled, REJECTED → rejected, EXPIRED and EXPIRED_IN_MATCH →
// expired, anything unknown → pending. Fills: executedQty; AvgPrice = cumulative quote /
// executed quantity (futures avgPrice as fallback). Fees: spot placements read the FULL
// answer's fills; otherwise (GetOrder, futures, whose order answers carry no commission) the
// account's trades of that order are read (/api/v3/myTrades, /fapi/v1/userTrades: one more
// call per filled order). A commission charged in the base asset (spot buys without BNB) is
// converted to the quote asset at its fill's price; a commission in a third asset (BNB) is
// reported in that asset. Note that a spot buy's fee in the base asset means the account
// holds FilledAmount minus that commission.
//
// # Position modes
//
// A USDⓈ-M account is in one-way mode (one net position per symbol, Binance's default) or
// hedge mode (a long and a short position per symbol). Account.AccountMode
// (exchange.ModeReader) reads the mode (GET /fapi/v1/positionSide/dual) and counts the open
// positions (GET /fapi/v3/positionRisk, entries with a non-zero positionAmt; each side of a
// hedge account counts once). For placing orders the account keeps the mode it read: it is
// read before the account's first futures order (never for spot), read again once ModeTTL
// (60 s) has passed, since an account lives long in connectors.Clients and its owner can
// switch modes on Binance's site, and dropped when Binance answers -4061 "Order's position
// side does not match user's setting." (or -1106 for reduceonly, hedge mode's refusal of
// reduceOnly). That answer is an EXCHANGE_ERROR whose message says the account's position
// mode changed; the order is never re-sent in the other mode within the same call, and the
// next order reads the mode again. Each PlaceOrder call builds all its requests for one mode.
//
//	one-way: no positionSide (Binance's New Order and New Algo Order pages: it defaults to
//	         BOTH, the only value one-way mode takes; leaving it out keeps the requests as
//	         they were); exits carry reduceOnly=true.
//	hedge:   positionSide LONG or SHORT on every futures order, regular and algo, closePosition
//	         included: LONG when it buys to open or sells to exit, SHORT when it sells to open
//	         or buys to exit (OrderRequest.HedgeLong, where stop_loss and take_profit always
//	         exit); never reduceOnly, which hedge mode refuses (-1106): side and positionSide
//	         make an order an exit there.
//
// # Refused before sending
//
// Besides exchange.OrderRequest.Validate (which also refuses a futures stop_loss or
// take_profit with a limit Price and no Amount, INVALID_AMOUNT: Binance takes closePosition
// only with STOP_MARKET and TAKE_PROFIT_MARKET, so a limit stop needs an amount), a client
// order ID outside Binance's ^[.A-Z:/a-z0-9_-]{1,36}$ is refused (EXCHANGE_ERROR), and a
// leverage outside 1-125 (INVALID_AMOUNT). What binancefake refuses, and why, is listed in
// binancefake/RULES.md.
//
// # Not supported
//
// OCO and trailing stops, margin trading, COIN-M futures, quarterly contracts, WebSocket
// streams (everything is polled over REST), fees in BNB converted to the quote asset, and
// changing the account's position mode (sigops reads it and follows it; the owner sets it).
// Permissions on a testnet connection fall back, when /sapi answers 404 (the spot testnet has
// no /sapi; the demo host may not either), to /api/v3/account and a futures balance read, with
// Withdraw and Transfer false.
//
// # Files
//
// The Binance and Bybit adapters name their parts alike: connector.go: Connector and
// Account; client.go: the signed calls, their retries, the clock and the failures;
// account.go: balance, leverage, permissions and the position mode; markets.go: markets and
// tickers; orders.go: placing, reading and cancelling orders; algo.go: the futures Algo
// Order API; errors.go: Binance's refusals as typed errors.
package binance
