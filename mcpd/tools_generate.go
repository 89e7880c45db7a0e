package mcpd

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/feeschedule"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
)

// labRequestSchema is lab.Request as JSON schema (the estimate's proceed and the job's request).
const labRequestSchema = `{"type": "object", "required": ["family", "symbol", "market", "timeframe", "from", "to", "experiments"],
  "properties": {"family": {"type": "string"}, "symbol": {"type": "string"}, "market": {"type": "string"},
    "timeframe": {"type": "string"}, "from": {"type": "string", "format": "date-time"}, "to": {"type": "string", "format": "date-time"},
    "experiments": {"type": "integer"}, "seed": {"type": "integer"}, "minTrades": {"type": "integer"},
    "initialBalance": {"type": "string"}, "positionSize": {"type": "string"}, "leverage": {"type": "integer"},
    "stopLoss": {"type": "string"}, "takeProfit": {"type": "string"}, "outOfSamplePercent": {"type": "integer"},
    "walkForwardFolds": {"type": "integer"}, "costs": {"type": "object", "properties": {"venue": {"type": "string"},
      "feeTier": {"type": "string"}, "fees": {"type": "boolean"}, "slippage": {"type": "boolean"},
      "slippageCapPercent": {"type": "string"}, "funding": {"type": "boolean"}}},
    "acknowledgeCost": {"type": "boolean"}}}`

// figuresSchema is lab.Figures: one experiment's figures over one window.
const figuresSchema = `{"type": "object", "properties": {"from": {"type": "integer", "description": "Unix ms"},
  "to": {"type": "integer", "description": "Unix ms"}, "candles": {"type": "integer"}, "trades": {"type": "integer"},
  "metrics": {"type": "object"}, "finalEquity": {"type": "number"},
  "costs": {"type": "object", "description": "grossPnl − fees − funding = metrics.totalPnL; slippage is inside grossPnl",
    "properties": {"grossPnl": {"type": "number"}, "fees": {"type": "number"}, "slippage": {"type": "number"}, "funding": {"type": "number"}}}}}`

// labResultSchema is lab.Result: the ranked experiments, the best, the split, the
// overfitting estimate and a walk-forward job's stitched record.
const labResultSchema = `{"type": "object", "description": "once done: the ranked experiments and the best set",
  "properties": {
    "objective": {"type": "string"}, "minTrades": {"type": "integer"}, "seed": {"type": "integer"},
    "candles": {"type": "integer"}, "failed": {"type": "integer"},
    "validation": {"type": "object", "description": "how the period was split: mode holdout or walkForward, and its windows"},
    "overfitting": {"type": "object", "description": "the probability of backtest overfitting (CSCV) and its reading",
      "properties": {"estimate": {"type": "object", "properties": {"probability": {"type": "number"}, "strategies": {"type": "integer"},
        "days": {"type": "integer"}, "blocks": {"type": "integer"}, "combinations": {"type": "integer"}, "medianLogit": {"type": "number"}}},
        "level": {"type": "string", "enum": ["low", "moderate", "high", "unknown"]}, "high": {"type": "boolean"}, "message": {"type": "string"}}},
    "walkForward": {"type": "object", "description": "walk-forward jobs: each fold's choice and figures, the stitched out-of-sample figures and curve, the latest fold's choice"},
    "experiments": {"type": "array", "items": {"type": "object", "description": "metrics, trades and finalEquity are in-sample; outOfSample and windows beside them"}},
    "best": {"type": "object", "properties": {"index": {"type": "integer"}, "params": {"type": "object"}, "json": {"type": "string"},
      "yaml": {"type": "string"}, "inSample": ` + figuresSchema + `, "outOfSample": ` + figuresSchema + `}}}}`

// generateOutput is lab.Outcome: an estimate, or the queued job.
var generateOutput = `{
  "type": "object",
  "properties": {
    "estimate": {"type": "object", "description": "without acknowledgeCost: what the job would cost; nothing was charged or queued",
      "required": ["experiments", "unitCostUsd", "totalCostUsd", "balanceUsd", "sufficient", "proceed", "message"],
      "properties": {"experiments": {"type": "integer"}, "unitCostUsd": {"type": "number"}, "totalCostUsd": {"type": "number"},
        "balanceUsd": {"type": "number"}, "sufficient": {"type": "boolean"},
        "proceed": ` + labRequestSchema + `, "message": {"type": "string"}}},
    "job": {"type": "object", "description": "with acknowledgeCost: the queued job; read it with get_strategy_job",
      "required": ["id", "state", "request", "experiments", "completed", "costUsd", "refundedUsd", "createdAt"],
      "properties": {"id": {"type": "string"}, "state": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
        "request": ` + labRequestSchema + `, "experiments": {"type": "integer"}, "completed": {"type": "integer"},
        "costUsd": {"type": "number"}, "refundedUsd": {"type": "number"},
        "createdAt": {"type": "string", "format": "date-time"}, "finishedAt": {"type": "string", "format": "date-time"},
        "result": ` + labResultSchema + `}}}}`

// generateTools is generate_strategy, when the server has a Lab.
func (s *Server) generateTools() []Tool {
	if s.o.Lab == nil {
		return nil
	}
	families := make([]string, 0, 4)
	for _, f := range strategy.Families() {
		families = append(families, string(f))
	}
	f := false
	return []Tool{{Def: mcp.NewTool("generate_strategy",
		mcp.WithDescription("Search a strategy family's parameters with backtests on one symbol, timeframe and period "+
			"(the Strategy Lab), ranked by Sharpe ratio on the in-sample part of the period; every set is also scored "+
			"on the out-of-sample part the search never sees (the last 30 % by default, or walk-forward folds), and the "+
			"result carries the best set's out-of-sample figures beside its in-sample ones and an overfitting estimate "+
			"(result.overfitting: the probability that the in-sample best does no better than the median out of sample; "+
			"level high means expect the out-of-sample figures). The best set comes as a bot spec fragment. Costs 0.50 USD per "+
			"experiment from your Strategy Lab wallet. Call it first without acknowledgeCost: it answers the cost "+
			"estimate and your balance, charges and queues nothing, and needs only mcp:read. Then send estimate.proceed "+
			"(acknowledgeCost true): the cost is charged and the job queued (needs mcp:live: it spends money; call "+
			"check_auth first); read it with get_strategy_job. Experiments that cannot run are refunded. Refusals: "+
			"TIER_NOT_ALLOWED (the tier lacks the Strategy Lab; pro and team have it), INSUFFICIENT_BALANCE (details "+
			"required and balance), INVALID_PARAMETER (details.parameter names it), INVALID_SYMBOL, INSUFFICIENT_SCOPE."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{Title: "Generate strategy", ReadOnlyHint: &f, DestructiveHint: &f,
			IdempotentHint: &f, OpenWorldHint: &f}),
		mcp.WithString("family", mcp.Required(), mcp.Enum(families...), mcp.Description("the strategy family to search")),
		mcp.WithString("symbol", mcp.Required(), mcp.Description("BASE/QUOTE, a symbol of the paper catalogue, e.g. BTC/USDT")),
		mcp.WithString("market", mcp.Enum("spot", "futures"), mcp.Description("spot (default) or futures")),
		mcp.WithString("timeframe", mcp.Required(), mcp.Enum(marketdata.Timeframes()...), mcp.Description("the candle timeframe")),
		mcp.WithString("from", mcp.Required(), mcp.Description("start of the period, RFC 3339 (e.g. 2026-01-01T00:00:00Z)")),
		mcp.WithString("to", mcp.Required(), mcp.Description("end of the period, RFC 3339, after from; at most 200,000 candles")),
		mcp.WithInteger("experiments", mcp.Required(), mcp.Min(1), mcp.Max(lab.MaxExperiments),
			mcp.Description("parameter sets to backtest, 1 to 30; the first is the family's defaults")),
		mcp.WithInteger("seed", mcp.Description("the search's seed; the same request and seed draw the same sets (absent: chosen and returned)")),
		mcp.WithInteger("minTrades", mcp.Min(0), mcp.Description("trades an experiment needs to rank by Sharpe ratio (default 10)")),
		mcp.WithString("initialBalance", mcp.Description("backtest starting balance in quote currency (default 10000)")),
		mcp.WithString("positionSize", mcp.Description(`position size as on a bot, "10%" (default) or a base amount`)),
		mcp.WithInteger("leverage", mcp.Min(1), mcp.Description("futures leverage (default 1)")),
		mcp.WithString("stopLoss", mcp.Description(`stop-loss as on a bot, "2%" or a price (optional)`)),
		mcp.WithString("takeProfit", mcp.Description(`take-profit as on a bot, "4%" or a price (optional)`)),
		mcp.WithInteger("outOfSamplePercent", mcp.Min(lab.MinOutOfSamplePercent), mcp.Max(lab.MaxOutOfSamplePercent),
			mcp.Description("share of the period, at its end, kept out of the search and used to score it, 10 to 50 (default 30); not with walkForwardFolds")),
		mcp.WithInteger("walkForwardFolds", mcp.Min(lab.MinFolds), mcp.Max(lab.MaxFolds),
			mcp.Description("instead of one split, 2 to 6 walk-forward folds over folds + 1 equal windows: each fold chooses on one window and is scored on the next; the cost stays 0.50 USD per experiment")),
		mcp.WithObject("costs", mcp.Description("the backtests' cost model, every cost on unless turned off: venue (binance "+
			"default, bybit, okx) and feeTier (default the venue's base: binance regular, bybit vip0, okx lv1) for its published "+
			"maker/taker fees; fees false for none; slippage (taker fills move by the candle's half range × the order's share "+
			"of its volume) with slippageCapPercent (default \"0.5\"); funding on futures from the venue's history (default "+
			"true there). Each window's figures itemise grossPnl, fees, slippage and funding"),
			mcp.Properties(map[string]any{
				"venue":              map[string]any{"type": "string", "enum": feeschedule.Venues()},
				"feeTier":            map[string]any{"type": "string"},
				"fees":               map[string]any{"type": "boolean"},
				"slippage":           map[string]any{"type": "boolean"},
				"slippageCapPercent": map[string]any{"type": "string"},
				"funding":            map[string]any{"type": "boolean"},
			})),
		mcp.WithBoolean("acknowledgeCost", mcp.Description("true to charge the cost and queue the job; absent or false answers the estimate")),
		mcp.WithRawOutputSchema(json.RawMessage(generateOutput))),
		Scope: auth.ScopeRead, ScopeFor: generateScope, ScopeRule: "mcp:live with acknowledgeCost true (it charges the wallet)",
		Spends: s.generateSpends, Changes: true, Handler: s.generate}}
}

// generateScope: the estimate charges nothing (mcp:read); the call that charges the wallet
// needs mcp:live. It reads the request exactly as the handler does (labRequest), so that
// the scope follows the value that decides the charge.
func generateScope(_ context.Context, _ string, args map[string]any) (string, error) {
	r, err := labRequest(args)
	if err != nil || !r.AcknowledgeCost {
		return auth.ScopeRead, nil // the call answers the decoding error and charges nothing
	}
	return auth.ScopeLive, nil
}

// generateSpends is generate_strategy's Spends: the cost a call with acknowledgeCost
// charges (nothing for an estimate, or a request the handler refuses).
func (s *Server) generateSpends(args map[string]any) (decimal.Decimal, error) {
	r, err := labRequest(args)
	if err != nil || !r.AcknowledgeCost {
		return decimal.Zero, nil
	}
	cost, err := s.o.Lab.Cost(r)
	if _, coded := errs.As(err); coded {
		return decimal.Zero, nil
	}
	return cost, err
}

// labRequest is generate_strategy's checked arguments as a lab.Request.
func labRequest(args map[string]any) (lab.Request, error) {
	var r lab.Request
	raw, err := json.Marshal(args)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, errs.New(errs.InvalidParameter,
			"the arguments do not match the schema (from and to are RFC 3339 times, experiments a whole number): %s", clipText(err.Error()))
	}
	return r, nil
}

func (s *Server) generate(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const name = "generate_strategy"
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return s.toolError(name, errs.New(errs.Unauthorized, "no caller")), nil
	}
	r, err := labRequest(req.GetArguments())
	if err != nil {
		return s.toolError(name, err), nil
	}
	out, err := s.o.Lab.Generate(ctx, lab.Caller{UserID: p.UserID}, r)
	if err != nil {
		return s.toolError(name, err), nil
	}
	return structured(out)
}

// clipText bounds a decoding error quoted back to the caller.
func clipText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
