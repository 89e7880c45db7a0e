package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"

	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
)

const candlesOutput = `{
  "type": "object",
  "required": ["symbol", "timeframe", "candles", "usingFallback"],
  "properties": {
    "symbol": {"type": "string"}, "timeframe": {"type": "string"},
    "candles": {"type": "array", "description": "closed candles, oldest first", "items": {"type": "object"}},
    "usingFallback": {"type": "boolean", "description": "the exchange could not be reached; the public fallback source answered"}}}`

const tickerOutput = `{"type": "object", "required": ["symbol", "market", "price", "asOf", "usingFallback"],
  "properties": {
    "symbol": {"type": "string", "description": "canonical BASE/QUOTE"}, "market": {"type": "string", "enum": ["spot", "futures"]},
    "price": {"type": "number", "description": "last price, quote currency"},
    "asOf": {"type": "integer", "description": "Unix ms when the price was read"},
    "usingFallback": {"type": "boolean", "description": "the public source answered: paper trading, or the exchange could not be reached"}}}`

const symbolsOutput = `{"type": "object", "required": ["symbols"], "properties": {
  "symbols": {"type": "array", "items": {"type": "string"}, "description": "canonical BASE/QUOTE, sorted"},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`

const symbolInfoOutput = `{"type": "object", "required": ["symbol", "base", "quote", "market", "tickSize", "stepSize", "minQty", "minNotional"],
  "properties": {
    "symbol": {"type": "string"}, "base": {"type": "string"}, "quote": {"type": "string"},
    "market": {"type": "string", "enum": ["spot", "futures"]},
    "tickSize": {"type": "number", "description": "price increment; prices are rounded down to it"},
    "stepSize": {"type": "number", "description": "amount increment; amounts are rounded down to it"},
    "minQty": {"type": "number", "description": "smallest amount, base currency"},
    "minNotional": {"type": "number", "description": "smallest amount × price, quote currency"}}}`

// symbolArgs are the symbol, exchangeId and market arguments of get_ticker and
// get_symbol_info.
func symbolArgs(exchangeHelp string) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithString("symbol", mcp.Required(), mcp.Description("any common spelling: BTCUSDT, BTC/USDT, btc-usdt, BINANCE:BTCUSDT.P")),
		mcp.WithString("exchangeId", mcp.Description(exchangeHelp)),
		mcp.WithString("market", mcp.Enum("spot", "futures"), mcp.Description("default spot")),
	}
}

// marketTools are get_candles, get_ticker, list_symbols and get_symbol_info, when the
// server has a candles service (its exchange resolution, sources and symbol index).
func (s *Server) marketTools() []Tool {
	if s.o.Candles == nil {
		return nil
	}
	return []Tool{
		{Def: mcp.NewTool("get_candles",
			mcp.WithDescription("Closed OHLCV candles of a symbol, oldest first: the same series as the dashboard's "+
				"charts (GET /api/charts/candles)."),
			mcp.WithToolAnnotation(readOnly("Get candles")),
			mcp.WithString("symbol", mcp.Required(), mcp.Description("any common spelling: BTCUSDT, BTC/USDT, BINANCE:BTCUSDT.P")),
			mcp.WithString("exchangeId", mcp.Required(), mcp.Description("binance, bybit, okx, paper, or the id of one of your exchange connections")),
			mcp.WithString("timeframe", mcp.Required(), mcp.Enum("1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w")),
			mcp.WithNumber("limit", mcp.Description("number of candles, 1 to 500 (default: the timeframe's)"), mcp.Min(1), mcp.Max(candles.MaxLimit)),
			mcp.WithString("market", mcp.Enum("spot", "futures"), mcp.Description("default spot")),
			mcp.WithRawOutputSchema(json.RawMessage(candlesOutput))),
			Scope: auth.ScopeRead, Handler: s.getCandles},
		{Def: mcp.NewTool("get_ticker", append([]mcp.ToolOption{
			mcp.WithDescription("A symbol's last price, read now from the source get_candles uses for that exchange, with the " +
				"time it was read. Paper trading prices come from the public market data paper orders fill at. Errors: " +
				"INVALID_SYMBOL (unknown symbol), MISSING_SYMBOL, NOT_FOUND (an exchange connection that is not yours), " +
				"EXCHANGE_ERROR (no source could answer)."),
			mcp.WithToolAnnotation(readOnly("Get ticker")),
			mcp.WithRawOutputSchema(json.RawMessage(tickerOutput))},
			symbolArgs("binance, bybit, okx, paper (default), or the id of one of your exchange connections")...)...),
			Scope: auth.ScopeRead, Handler: s.getTicker},
		{Def: mcp.NewTool("list_symbols", append([]mcp.ToolOption{
			mcp.WithDescription("Canonical symbols (BASE/QUOTE) signals and tools accept, sorted, a page at a time: the paper " +
				"catalogue and what validated exchange connections list. exchangeId paper narrows to the paper " +
				"catalogue; query keeps symbols containing it in any spelling (btc, ETH/USDT). Errors: " +
				"INVALID_PARAMETER (limit, cursor, market)."),
			mcp.WithToolAnnotation(readOnly("List symbols")),
			mcp.WithString("exchangeId", mcp.Description("paper for the paper catalogue only; otherwise every known symbol")),
			mcp.WithString("market", mcp.Enum("spot", "futures"), mcp.Description("default spot")),
			mcp.WithString("query", mcp.Description("part of a symbol, any case, separators ignored")),
			mcp.WithRawOutputSchema(json.RawMessage(symbolsOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listSymbols},
		{Def: mcp.NewTool("get_symbol_info", append([]mcp.ToolOption{
			mcp.WithDescription("A symbol's trading rules: tick size, step size, minimum amount and minimum notional, which " +
				"orders are rounded to and checked against. exchangeId paper (default) answers the paper catalogue; " +
				"one of your exchange connections asks that exchange. Errors: INVALID_SYMBOL (unknown, or not traded " +
				"on that market), NOT_FOUND (a connection that is not yours), EXCHANGE_DISCONNECTED (the connection " +
				"cannot be used), INVALID_PARAMETER (binance, bybit or okx without a connection)."),
			mcp.WithToolAnnotation(readOnly("Get symbol info")),
			mcp.WithRawOutputSchema(json.RawMessage(symbolInfoOutput))},
			symbolArgs("paper (default) or the id of one of your exchange connections")...)...),
			Scope: auth.ScopeRead, Handler: s.getSymbolInfo},
	}
}

func (s *Server) getTicker(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_ticker", err), nil
	}
	t, err := s.o.Candles.Ticker(ctx, candles.TickerRequest{Symbol: req.GetString("symbol", ""),
		ExchangeID: req.GetString("exchangeId", ""), Market: req.GetString("market", ""), Owner: owner})
	if err != nil {
		return s.toolError("get_ticker", err), nil
	}
	return structured(t)
}

// compactSymbol is a symbol or query without case or separators, as Resolve compares them.
func compactSymbol(s string) string {
	return strings.NewReplacer("/", "", "-", "", "_", "").Replace(strings.ToUpper(strings.TrimSpace(s)))
}

func (s *Server) listSymbols(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_symbols", err), nil
	}
	kind, err := candles.ParseMarket(req.GetString("market", ""))
	if err != nil {
		return s.toolError("list_symbols", err), nil
	}
	var symbols []string
	if strings.EqualFold(strings.TrimSpace(req.GetString("exchangeId", "")), candles.Paper) {
		for _, m := range paper.Markets(kind) {
			symbols = append(symbols, m.Symbol)
		}
	} else {
		symbols = s.o.Candles.Symbols()
	}
	if q := compactSymbol(req.GetString("query", "")); q != "" {
		symbols = slices.DeleteFunc(symbols, func(sym string) bool { return !strings.Contains(compactSymbol(sym), q) })
	}
	symbols, next := paginate(symbols, func(sym string) string { return sym }, p)
	if symbols == nil {
		symbols = []string{}
	}
	return structured(struct {
		Symbols    []string `json:"symbols"`
		NextCursor string   `json:"nextCursor,omitempty"`
	}{symbols, next})
}

// symbolInfo is exchange.MarketInfo as get_symbol_info answers it.
type symbolInfo struct {
	Symbol      string         `json:"symbol"`
	Base        string         `json:"base"`
	Quote       string         `json:"quote"`
	Market      string         `json:"market"`
	TickSize    httpapi.Number `json:"tickSize"`
	StepSize    httpapi.Number `json:"stepSize"`
	MinQty      httpapi.Number `json:"minQty"`
	MinNotional httpapi.Number `json:"minNotional"`
}

func (s *Server) getSymbolInfo(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	symbol, err := s.o.Candles.Resolve(req.GetString("symbol", ""))
	if err != nil {
		return s.toolError("get_symbol_info", err), nil
	}
	kind, err := candles.ParseMarket(req.GetString("market", ""))
	if err != nil {
		return s.toolError("get_symbol_info", err), nil
	}
	markets, venue, err := s.markets(ctx, req.GetString("exchangeId", ""), kind)
	if err != nil {
		return s.toolError("get_symbol_info", err), nil
	}
	for _, m := range markets {
		if m.Symbol == symbol {
			return structured(symbolInfo{Symbol: m.Symbol, Base: m.Base, Quote: m.Quote, Market: string(kind),
				TickSize: httpapi.Num(m.TickSize), StepSize: httpapi.Num(m.StepSize), MinQty: httpapi.Num(m.MinQty), MinNotional: httpapi.Num(m.MinNotional)})
		}
	}
	return s.toolError("get_symbol_info", errs.New(errs.InvalidSymbol, "%s is not traded on %s %s", symbol, venue, kind)), nil
}

// markets are the market rules of kind on exchangeID: the paper catalogue, or those of one
// of the caller's exchange connections, asked of the exchange.
func (s *Server) markets(ctx context.Context, exchangeID string, kind exchange.Kind) ([]exchange.MarketInfo, string, error) {
	name := strings.ToLower(strings.TrimSpace(exchangeID))
	switch name {
	case "", candles.Paper:
		return paper.Markets(kind), candles.Paper, nil
	case candles.Binance, candles.Bybit, candles.OKX:
		return nil, "", errs.New(errs.InvalidParameter,
			"an exchange's trading rules are read through one of your connections: give its id (list_exchange_connections), or paper")
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return nil, "", err
	}
	c, err := s.conns.OwnedBy(ctx, exchangeID, owner)
	if errors.Is(err, credentials.ErrNotFound) {
		return nil, "", errs.New(errs.NotFound, "exchange not found")
	}
	if err != nil {
		return nil, "", err
	}
	// The portfolio's answers for the same two cases.
	if !c.Ready || c.Sealed == "" {
		return nil, "", errs.New(errs.ExchangeDisconnected, "exchange connection is not ready (%s)", c.Reason)
	}
	if s.o.Exchanges == nil {
		return nil, "", errs.New(errs.ExchangeDisconnected, "credentials unavailable")
	}
	live, err := s.o.Exchanges.Client(c)
	if err != nil {
		return nil, "", err
	}
	markets, err := live.Markets(ctx, kind)
	return markets, c.Exchange, err
}

func (s *Server) getCandles(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// The limit goes through the REST parameter's parser, so both refuse alike.
	raw := ""
	switch v := req.GetArguments()["limit"].(type) {
	case nil:
	case float64:
		raw = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		raw = "not a number"
	}
	limit, err := candles.ParseLimit(raw)
	if err != nil {
		return s.toolError("get_candles", err), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_candles", err), nil
	}
	res, err := s.o.Candles.Get(ctx, candles.Request{Symbol: req.GetString("symbol", ""),
		ExchangeID: req.GetString("exchangeId", ""), Timeframe: req.GetString("timeframe", ""), Limit: limit,
		Market: req.GetString("market", ""), Owner: owner})
	if err != nil {
		return s.toolError("get_candles", err), nil
	}
	body, err := res.MarshalJSON()
	if err != nil {
		return s.toolError("get_candles", err), nil
	}
	return mcp.NewToolResultStructured(json.RawMessage(body), string(body)), nil
}
