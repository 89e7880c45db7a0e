// Package okx is the OKX v5 adapter: exchange.Connector (Name "okx") and exchange.Live,
// exchange.RequestWindow and exchange.ModeReader for a trading account, spot and
// USDT-margined linear perpetual swaps. okxfake beside it is a local fake of the endpoints
// used, for tests.
//
// # Client: our own, not a library
//
// As with Bybit (see the bybit package), sigops needs a handful of endpoints and needs them
// exactly: every call bounded by a context, sizes and prices as the exact decimal strings
// of shopspring/decimal, the code and each order's sCode of every refusal (to map it to the
// spec's codes and to tell "refused" from "outcome unknown"), the expTime header on order
// placement, the signature computed over exactly the bytes sent, and error messages
// scrubbed of the key, secret and passphrase. That is about 300 lines of client
// (client.go), so the adapter has its own and no new dependency.
//
// # Requests
//
// Signed requests carry OK-ACCESS-KEY, OK-ACCESS-TIMESTAMP (ISO 8601 UTC with milliseconds,
// on OKX's clock as learned), OK-ACCESS-PASSPHRASE (exchange.Credentials.Passphrase, which
// OKX keys always have: Connect refuses a key without one with
// exchange.ErrInvalidCredentials) and OK-ACCESS-SIGN = base64(HMAC-SHA256(secret, timestamp
// + method + requestPath + body)), requestPath holding the query string of a GET and body
// the JSON body of a POST, as sent (Sign). OKX refuses a timestamp more than 30 s from its
// clock (50102): the client then learns OKX's clock (/api/v5/public/time) and sends the
// request once more; the offset is kept per host.
//
// Demo trading (Endpoints.Testnet) is OKX's production host with the header
// x-simulated-trading: 1 on every request: OKX has no separate testnet host. A demo key
// without the header, or a production key with it, is refused (50101), reported as a
// refused key that names endpoints.testnet.
//
// Every Exchange call is bounded by Connector.Timeout (DefaultTimeout, 2 s: the spec's
// "exchange call up to 2000 ms"), retries included. Reads (and the idempotent writes
// set-leverage and the cancels) are retried on no answer, 5xx and OKX's busy and time-out
// codes (50001, 50004, 50013, 50026, 51054, 51149): at most 3 attempts, backoff 100,
// 200 ms, each attempt capped at 60% of the budget. Order placement is never retried
// blindly; see Account.PlaceOrder.
//
// Endpoints: the base URL is Endpoints.Spot, else https://www.okx.com; swap calls use
// Endpoints.Futures when set.
//
// # Markets
//
// /api/v5/public/instruments?instType=SPOT|SWAP (OKX answers all in one page), instruments
// in state live; swaps: ctType linear, settleCcy USDT, a contract counted in the base
// currency (ctValCcy), that is the USDT-margined perpetuals. Cached per host for
// MarketsTTL (5 min), concurrent refreshes deduplicated, the older list used if a refresh
// fails. Symbols are BASE/QUOTE: BTC-USDT and BTC-USDT-SWAP are both BTC/USDT, of kind spot
// and futures; OKX's instId is accepted as input too.
//
// Swap sizes are contracts of ctVal base units. Amounts stay base amounts in sigops: an
// order's sz is Amount / ctVal, exactly, and an amount that is not a whole number of lots
// (ctVal × lotSz) or is below minSz contracts is refused before sending (INVALID_AMOUNT);
// Markets gives StepSize = ctVal × lotSz and MinQty = ctVal × minSz, so that the executor's
// rounding always gives a whole number of lots; Amount and FilledAmount come back as
// contracts × ctVal. (0.123 BTC on BTC-USDT-SWAP, ctVal 0.01, is 12.3 contracts: refused
// with a lot of 1 contract, sent as "12.3" with a lot of 0.1.) OKX publishes no minimum
// notional: MinNotional is zero.
//
// # Orders
//
// clOrdId (and algoClOrdId) is ClOrdID(ClientOrderID): OKX takes 1 to 32 letters and
// digits, so the executor's "sg-" + 32 hex digits become "sg" + the first 30 of them (see
// ClOrdID for the collision bound and other IDs). Orders read back carry the caller's
// ClientOrderID.
//
// tdMode is cash on spot and cross on swaps (isolated margin is not used). Spot market
// orders are sent with tgtCcy=base_ccy, so that sz is the base amount (OKX reads a market
// buy's sz as quote by default), and banAmend=true, so that OKX refuses a market order the
// balance cannot cover instead of shrinking it. Limit orders are GTC (ordType limit).
// reduceOnly is never sent on spot (OKX refuses it, 51139).
//
// Position modes: swap orders are placed in the account's posMode from
// /api/v5/account/config, read before the first swap order and again after ModeTTL (60 s).
// In net_mode no posSide is sent and reduceOnly is sent when asked; in long_short_mode
// posSide is long or short (exchange.OrderRequest.HedgeLong: an exit sells on the long
// side or buys on the short side) and reduceOnly is not sent, OKX taking it in net mode only.
// When OKX refuses the posSide (51000 "Parameter posSide error": the mode was changed behind
// the account's back) the mode is dropped and read again for the next order; the refused
// order is EXCHANGE_ERROR saying the account's position mode changed, and is never sent
// again in the other mode inside the call. AccountMode reads posMode and counts the open
// swap positions (/api/v5/account/positions).
//
// A swap entry with Leverage ≥ 1 first sets the instrument's cross leverage
// (/api/v5/account/set-leverage), once per account and value.
//
// Statuses: live → open, partially_filled → partially_filled, filled → filled, canceled
// and mmp_canceled → cancelled (FilledAmount keeps any fill), anything unknown → pending.
// Fees: OKX reports a charge as a negative fee (fee/feeCcy), sigops as a positive one, in
// the currency OKX charged it in, as the other adapters report it: a spot buy's fee is in
// the base currency, which tells the executor the account holds FilledAmount less that fee
// (the position it books). A net swap rebate reads as a negative fee.
//
// OKX keeps a cancelled order without fills readable for a limited time (2 hours in its
// documentation); after that GetOrder reports it not found.
//
// # Stop-loss and take-profit
//
// stop_loss and take_profit are algo orders: POST /api/v5/trade/order-algo, ordType
// conditional, slTriggerPx/slOrdPx (stop-loss) or tpTriggerPx/tpOrdPx (take-profit) with
// the trigger on the last price and order price -1 (market) or Price, algoClOrdId the
// mapped client ID; spot: tdMode cash, tgtCcy base_ccy; swaps: tdMode cross, reduceOnly in
// net mode, posSide in long/short mode. A futures stop without an amount
// (exchange.OrderRequest.ClosesPosition) has no sz and closeFraction=1: OKX closes whatever
// the position holds when it triggers; one with a limit price is refused before sending
// (INVALID_AMOUNT), OKX taking closeFraction only at the market. OKX keeps one such
// whole-position order per position: a second (a take-profit beside a stop-loss) is
// refused (51088, EXCHANGE_ERROR). Algo orders are read back with GET
// /api/v5/trade/order-algo by algoClOrdId (GetOrder looks there when no order has the
// clOrdId) and cancelled with POST /api/v5/trade/cancel-algos by algoId. Their Order.ID is
// "algo-" + algoId; live and pause are open, canceled and order_failed cancelled, and a
// triggered one (effective) has the status, fills, price and fee of the order it placed.
//
// # Exactly once
//
// OKX refuses a clOrdId only while an order holding it is pending: a filled market order
// does not stop a second order with the same clOrdId. So PlaceOrder looks the order up
// first (and returns it if it exists), a duplicate answer (51016, algo 51065) returns the
// order that has the ID, and a placement that got no answer is looked up and, when not
// found, reported as ErrOrderUnconfirmed (untyped) without being sent again. Each
// POST /api/v5/trade/order carries expTime = OKX's clock at the send + Expiry (5 s): OKX
// refuses it unprocessed after that (50036/50037), so a lost market or limit order cannot
// land later than Timeout + Expiry + ClockMargin (8 s) after the call started
// (RequestWindowFor). Algo orders take no expTime; they are bounded only by OKX's 30 s
// timestamp check on arrival, so their window is Timeout + 30 s + ClockMargin (33 s), which
// is RequestWindow, the one window of the account.
//
// # Errors
//
// Failures are *errs.Error with the spec's codes, from the answer's code, the refused
// order's sCode (a batch code "1" with sCode in data is the order's refusal) or the HTTP
// status: refused key (50100, 50101, 50103-50107, 50110-50114, 50119, HTTP 401)
// EXCHANGE_DISCONNECTED wrapping exchange.ErrInvalidCredentials; a timestamp still refused
// after a resync (50102) and a key or account that may not do this (50120, 50030, 51024,
// ...) EXCHANGE_DISCONNECTED; insufficient balance or margin (51008, 51119, 51127, 51131)
// INSUFFICIENT_BALANCE with details asset, available and (estimated) required; sizes and
// minimums (51020, 51121, 51169, 51170, 51202, ...) INVALID_AMOUNT; prices and triggers
// (51006, 51116, 51277-51280, ...) INVALID_PRICE; instruments (51001, 51015, 51021, ...)
// INVALID_SYMBOL; the generic 51000 "Parameter {param} error" by its parameter (sz, px and
// the trigger prices, instId; posSide is the mode change above); rate limits (50011 and
// HTTP 429, 50040, 50061) RATE_LIMITED with RetryAfter 2 s (OKX counts its limits per 2
// seconds and sends no reset header); no answer or 5xx after the retries EXCHANGE_ERROR
// wrapping exchange.ErrUnreachable; any other refusal EXCHANGE_ERROR with OKX's message and
// code. The one untyped failure is ErrOrderUnconfirmed. Credentials never appear in an
// error: OKX's messages are scrubbed of the key, secret and passphrase.
//
// # Permissions
//
// From /api/v5/account/config: perm holds read_only, trade and withdraw. Read is true for a
// key OKX accepts; SpotTrade and FuturesTrade are trade; Withdraw is withdraw (sigops
// refuses such keys); Transfer is false, OKX having no permission of its own for it (its
// funds transfer endpoint takes a trade key and moves funds between the user's own
// accounts); IPRestricted is a non-empty ip.
//
// # Not supported
//
// Isolated margin, expiry futures, options, inverse and USDC-margined swaps, margin trading
// on spot, OCO and trailing orders, TP/SL attached to an entry (attachAlgoOrds: the
// executor's price watcher closes positions itself), WebSocket streams (everything is
// polled over REST).
//
// # Files
//
// The adapters name their parts alike: connector.go: Connector and Account; client.go: the
// signed calls, their retries, the clock and the failures; account.go: balance, leverage,
// permissions and the position mode; markets.go: markets, tickers and contract sizes;
// orders.go: placing, reading and cancelling orders; algo.go: stop-loss and take-profit
// algo orders; errors.go: OKX's refusals as typed errors.
//
// What this adapter and the Bybit adapter do alike lives once in restkit: the decimal
// strings (num), the instruments cache, the clock offsets per host, the retry loop of a
// call, the pooled HTTP client and base URLs, and the typed errors of an unreachable host
// and of a short balance.
package okx
