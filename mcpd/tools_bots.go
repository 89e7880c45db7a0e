package mcpd

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

// botSchema is one bot as the registry projects it (registry.Bot).
const botSchema = `{
  "type": "object",
  "required": ["id", "namespace", "name", "market", "account", "positionSize", "leverage", "availability", "webhookEnabled"],
  "properties": {
    "id": {"type": "string", "description": "the bot's id, for the other bot tools"},
    "namespace": {"type": "string"},
    "name": {"type": "string"},
    "owner": {"type": "string"},
    "account": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["paper", "exchange"]}, "name": {"type": "string"}, "id": {"type": "string"}}},
    "market": {"type": "string"},
    "symbol": {"type": "string"},
    "positionSize": {"type": "string"},
    "leverage": {"type": "integer"},
    "stopLoss": {"type": "string"},
    "takeProfit": {"type": "string"},
    "availability": {"type": "string", "enum": ["active", "paused", "disabled"]},
    "pausedReason": {"type": "string"},
    "disabledCode": {"type": "string"},
    "disabledReason": {"type": "string"},
    "webhookEnabled": {"type": "boolean"}
  }
}`

var (
	listBotsOutput = `{"type": "object", "required": ["bots"], "properties": {
  "bots": {"type": "array", "items": ` + botSchema + `},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`
	riskOutput = `{"type": "object",
  "required": ["botId", "currentExposure", "maxExposureAllowed", "dailyLossLimit", "dailyLossUsed", "consecutiveLosses", "maxConsecutiveLosses", "riskScore", "riskLevel"],
  "properties": {
    "botId": {"type": "string"},
    "currentExposure": {"type": "number", "description": "percent of equity in open positions"},
    "maxExposureAllowed": {"type": "number", "description": "percent; 0 is no limit"},
    "dailyLossLimit": {"type": "number", "description": "quote currency; 0 is no limit"},
    "dailyLossUsed": {"type": "number", "description": "realized loss today (UTC), quote currency"},
    "consecutiveLosses": {"type": "integer"},
    "maxConsecutiveLosses": {"type": "integer", "description": "0 is no limit"},
    "riskScore": {"type": "integer", "minimum": 1, "maximum": 10, "description": "1 (low) to 10 (extreme), as runtime/risk scores it"},
    "riskLevel": {"type": "string", "enum": ["low", "moderate", "high", "extreme"]}}}`
	analyticsOutput = `{"type": "object",
  "required": ["botId", "botName", "period", "startDate", "endDate", "metrics", "formatted", "availablePeriods"],
  "properties": {
    "botId": {"type": "string"}, "botName": {"type": "string"}, "symbol": {"type": "string"},
    "period": {"type": "string"}, "startDate": {"type": "string"}, "endDate": {"type": "string"},
    "startingEquity": {"type": ["number", "null"]},
    "metrics": {"type": "object", "description": "figures of the period: trades, win rate, P&L, drawdown, Sharpe"},
    "formatted": {"type": "object", "description": "the same figures as display strings"},
    "equityCurve": {"type": "array", "description": "with includeEquity: the equity at the period's start, then each day's trades (a point per trade while they are kept) and the day's close; a day whose trades are no longer kept is its close alone",
      "items": {"type": "object", "required": ["timestamp", "equity", "drawdown"],
        "properties": {"timestamp": {"type": "integer", "description": "ms since the epoch: the trade's close or the day's end"},
          "equity": {"type": "number"}, "drawdown": {"type": "number", "description": "below the running peak; its largest is metrics.maxDrawdown when every day is drawn per trade"}}}},
    "availablePeriods": {"type": "array", "items": {"type": "object"}}}}`
)

// botTools are the bot read tools: list_bots, get_bot, get_bot_risk and get_bot_analytics.
func (s *Server) botTools() []Tool {
	botID := mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)"))
	return []Tool{
		{Def: mcp.NewTool("list_bots", append([]mcp.ToolOption{
			mcp.WithDescription("Your signal bots with their settings and state (active, paused or disabled), " +
				"ordered by id, a page at a time: pass nextCursor as cursor to read on."),
			mcp.WithToolAnnotation(readOnly("List bots")),
			mcp.WithRawOutputSchema(json.RawMessage(listBotsOutput))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listBots},
		{Def: mcp.NewTool("get_bot",
			mcp.WithDescription("One of your bots: its settings and state (active, paused or disabled, and why)."),
			mcp.WithToolAnnotation(readOnly("Get bot")), botID,
			mcp.WithRawOutputSchema(json.RawMessage(botSchema))),
			Scope: auth.ScopeRead, Handler: s.getBot},
		{Def: mcp.NewTool("get_bot_risk",
			mcp.WithDescription("A bot's risk metrics against its limits: exposure, today's loss, consecutive "+
				"losses, and a 1-10 risk score with its level. The same figures as the REST risk endpoint."),
			mcp.WithToolAnnotation(readOnly("Get bot risk")), botID,
			mcp.WithRawOutputSchema(json.RawMessage(riskOutput))),
			Scope: auth.ScopeRead, Handler: s.getBotRisk},
		{Def: mcp.NewTool("get_bot_analytics",
			mcp.WithDescription("A bot's trading analytics over a period: trades, win rate, P&L, drawdown, Sharpe "+
				"ratio and optionally the equity curve (a point per trade while the trades are kept, a point per day "+
				"before). Give period, or startDate (and endDate) for a custom range."),
			mcp.WithToolAnnotation(readOnly("Get bot analytics")), botID,
			mcp.WithString("period", mcp.Description("today, week, month, 7d, 30d, 90d, ytd or all (default 30d); not with startDate")),
			mcp.WithString("startDate", mcp.Description("first UTC day of a custom range, YYYY-MM-DD")),
			mcp.WithString("endDate", mcp.Description("last UTC day of a custom range, YYYY-MM-DD (default today); needs startDate")),
			mcp.WithBoolean("includeEquity", mcp.Description("include the equity curve: a point per trade while the trades are kept, a point per day before (default false)")),
			mcp.WithRawOutputSchema(json.RawMessage(analyticsOutput))),
			Scope: auth.ScopeRead, Handler: s.getBotAnalytics},
	}
}

func (s *Server) listBots(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_bots", err), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("list_bots", err), nil
	}
	ids, err := s.o.Bots.OwnerBots(ctx, owner)
	if err != nil {
		return s.toolError("list_bots", err), nil
	}
	ids, next := paginate(ids, func(id string) string { return id }, p)
	bots, err := s.o.Bots.OwnedBots(ctx, owner, ids)
	if err == nil {
		err = s.o.Bots.WithPauses(ctx, bots, s.o.Now())
	}
	if err != nil {
		return s.toolError("list_bots", err), nil
	}
	if bots == nil {
		bots = []registry.Bot{}
	}
	return structured(struct {
		Bots       []registry.Bot `json:"bots"`
		NextCursor string         `json:"nextCursor,omitempty"`
	}{bots, next})
}

// ownedBot is the caller's bot named by the botId argument, or registry.ErrBotNotFound: the
// same answer for a missing bot and another user's (decision "MCP server" 8).
func (s *Server) ownedBot(ctx context.Context, req mcp.CallToolRequest) (registry.Bot, error) {
	return s.ownedBotArg(ctx, req.GetArguments())
}

// ownedBotArg is ownedBot of the checked arguments args.
func (s *Server) ownedBotArg(ctx context.Context, args map[string]any) (registry.Bot, error) {
	id, err := botIDOf(args)
	if err != nil {
		return registry.Bot{}, err
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return registry.Bot{}, err
	}
	return registry.Owned(ctx, s.o.Bots, id, owner)
}

func (s *Server) getBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("get_bot", err), nil
	}
	// A runtime pause (pause_bot, errors, risk, a downgrade) shows as the bot's state.
	bots := []registry.Bot{bot}
	if err := s.o.Bots.WithPauses(ctx, bots, s.o.Now()); err != nil {
		return s.toolError("get_bot", err), nil
	}
	return structured(bots[0])
}

func (s *Server) getBotRisk(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, err := botIDArg(req)
	if err != nil {
		return s.toolError("get_bot_risk", err), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_bot_risk", err), nil
	}
	m, err := s.o.Trading.OwnedRiskMetrics(ctx, s.o.Bots, id, owner)
	if err != nil {
		return s.toolError("get_bot_risk", err), nil
	}
	return structured(m)
}

func (s *Server) getBotAnalytics(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("get_bot_analytics", err), nil
	}
	include := ""
	if v, ok := req.GetArguments()["includeEquity"].(bool); ok && v {
		include = "true"
	}
	q, err := analytics.ParseQuery(req.GetString("period", ""), req.GetString("startDate", ""),
		req.GetString("endDate", ""), include, s.o.Now())
	if err != nil {
		return s.toolError("get_bot_analytics", err), nil
	}
	report, err := s.o.Analytics.Bot(ctx, bot, q)
	if err != nil {
		return s.toolError("get_bot_analytics", err), nil
	}
	return structured(report)
}
