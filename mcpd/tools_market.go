package mcpd

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
)

const candlesOutput = `{
  "type": "object",
  "required": ["symbol", "timeframe", "candles", "usingFallback"],
  "properties": {
    "symbol": {"type": "string"}, "timeframe": {"type": "string"},
    "candles": {"type": "array", "description": "closed candles, oldest first", "items": {"type": "object"}},
    "usingFallback": {"type": "boolean", "description": "the exchange could not be reached; the public fallback source answered"}}}`

// marketTools is get_candles, when the server has a candles service.
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
			mcp.WithString("exchangeId", mcp.Required(), mcp.Description("binance, bybit, paper, or the id of one of your exchange connections")),
			mcp.WithString("timeframe", mcp.Required(), mcp.Enum("1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w")),
			mcp.WithNumber("limit", mcp.Description("number of candles, 1 to 500 (default: the timeframe's)"), mcp.Min(1), mcp.Max(candles.MaxLimit)),
			mcp.WithString("market", mcp.Enum("spot", "futures"), mcp.Description("default spot")),
			mcp.WithRawOutputSchema(json.RawMessage(candlesOutput))),
			Scope: auth.ScopeRead, Handler: s.getCandles},
	}
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
