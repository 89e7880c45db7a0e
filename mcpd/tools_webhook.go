package mcpd

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/auth"
)

// webhookTools is get_webhook_url, when the server has a Fleet (the URL lives in the
// bot's Secret, which only the Kubernetes API holds).
func (s *Server) webhookTools() []Tool {
	if s.o.Fleet == nil {
		return nil
	}
	return []Tool{
		{Def: mcp.NewTool("get_webhook_url",
			mcp.WithDescription("The webhook URL of one of your bots: TradingView alerts (or anything else) POST signals "+
				"to it. The URL is a secret: whoever has it can send the bot signals that trade. Keep it secret, give it "+
				"only to the user who asked, and never write it to logs, files or chats. Needs mcp:paper for a paper "+
				"bot and mcp:live for a bot on an exchange connection (call check_auth first to see your scope). "+
				"regenerate_webhook replaces a leaked URL. Errors: NOT_FOUND (no such bot of yours, or its URL is "+
				"not made yet: retry in a few seconds), INSUFFICIENT_SCOPE."),
			mcp.WithToolAnnotation(readOnly("Get webhook URL")),
			mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)")),
			mcp.WithRawOutputSchema(json.RawMessage(`{"type": "object", "required": ["botId", "webhookUrl"], "properties": {
  "botId": {"type": "string"}, "webhookUrl": {"type": "string", "description": "secret: lets anyone send the bot signals"}}}`))),
			Scope: auth.ScopeRead, ScopeFor: s.botVenueScope, Venue: true,
			ScopeRule: "mcp:paper on a paper bot, mcp:live on an exchange bot: the URL lets anyone send the bot signals",
			Handler:   s.getWebhookURL},
	}
}

// getWebhookURL answers the caller's bot's URL. The bot is read through registry.Owned
// first, so that another user's bot answers as every other bot tool does; the URL itself
// is never logged (toolError logs only errors without a code, which never hold it).
func (s *Server) getWebhookURL(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	bot, err := s.ownedBot(ctx, req)
	if err != nil {
		return s.toolError("get_webhook_url", err), nil
	}
	uid, err := userID(ctx)
	if err != nil {
		return s.toolError("get_webhook_url", err), nil
	}
	url, err := s.o.Fleet.WebhookURL(ctx, fleet.Caller{UserID: uid, Email: bot.Owner}, bot.ID)
	if err != nil {
		return s.toolError("get_webhook_url", err), nil
	}
	return structured(struct {
		BotID      string `json:"botId"`
		WebhookURL string `json:"webhookUrl"`
	}{bot.ID, url})
}
