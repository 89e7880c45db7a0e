package mcpd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/registry"
)

// CreateWait is how long create_bot waits for the controller to project the new bot before
// it answers state "pending" (decision "MCP server" 12).
const CreateWait = 3 * time.Second

// States of a created bot in create_bot's answer.
const (
	StateReady   = "ready"
	StatePending = "pending"
)

// changeAnnotation is the annotation of a tool that changes a bot but reaches no exchange.
func changeAnnotation(title string, destructive, idempotent bool) mcp.ToolAnnotation {
	f := false
	return mcp.ToolAnnotation{Title: title, ReadOnlyHint: &f, DestructiveHint: &destructive, IdempotentHint: &idempotent, OpenWorldHint: &f}
}

// Answers of the bot action tools.
type (
	// botChange is what create_bot and update_bot answer: the object as the API server
	// stored it and, for create_bot, the projection once the controller has made it.
	botChange struct {
		ID        string                  `json:"id"`
		Name      string                  `json:"name"`
		Namespace string                  `json:"namespace"`
		State     string                  `json:"state,omitempty"`
		Spec      tradingv1.SignalBotSpec `json:"spec"`
		Bot       *registry.Bot           `json:"bot,omitempty"`
		Message   string                  `json:"message"`
	}
	// pauseState is what pause_bot and resume_bot answer: the runtime pause after the call.
	pauseState struct {
		BotID   string `json:"botId"`
		Paused  bool   `json:"paused"`
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message"`
	}
	// botDone is what delete_bot and regenerate_webhook answer.
	botDone struct {
		BotID   string `json:"botId"`
		Message string `json:"message"`
	}
)

var (
	botChangeOutput = `{"type": "object", "required": ["id", "name", "namespace", "spec", "message"], "properties": {
  "id": {"type": "string", "description": "the bot's id, for the other bot tools"},
  "name": {"type": "string"}, "namespace": {"type": "string"},
  "state": {"type": "string", "enum": ["ready", "pending"], "description": "create_bot: ready once the controller has projected the bot (bot is then set), pending before"},
  "spec": {"type": "object", "description": "the spec as stored, defaults filled in"},
  "bot": ` + botSchema + `,
  "message": {"type": "string"}}}`
	pauseOutput = `{"type": "object", "required": ["botId", "paused", "message"], "properties": {
  "botId": {"type": "string"}, "paused": {"type": "boolean", "description": "whether a runtime pause is in force after the call"},
  "reason": {"type": "string", "enum": ["Manual", "Errors", "Risk", "Downgrade"]}, "message": {"type": "string"}}}`
	botDoneOutput = `{"type": "object", "required": ["botId", "message"], "properties": {"botId": {"type": "string"}, "message": {"type": "string"}}}`
)

// fleetTools are the bot action tools, over Options.Fleet: create_bot, update_bot,
// delete_bot, pause_bot, resume_bot and regenerate_webhook.
func (s *Server) fleetTools() []Tool {
	if s.o.Fleet == nil {
		return nil
	}
	botID := mcp.WithString("botId", mcp.Required(), mcp.Description("the bot's id (list_bots lists yours)"))
	venue := " Needs mcp:paper for a paper bot, mcp:live for a live (exchange) one: call check_auth first to see your scope."
	free := " Free: no wallet charge."
	return []Tool{
		{Def: rawInputTool("create_bot", botInputSchema(`"name": {"type": "string", "minLength": 1, "maxLength": 245, "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "description": "the bot's name, unique among your bots: lower-case letters, digits, '-' and '.'"}`,
			"name", "account"),
			mcp.WithDescription("Create a signal bot in your namespace, trading on one of your paper accounts or exchange connections "+
				"of that namespace (account {kind, name}). A paper bot without account.name trades on your paper account \"paper\", "+
				"made with 10,000 USDT on first use; an account of yours in another namespace (applied by your platform team) "+
				"cannot be used and the refusal says so. Settings left out take the CRD's defaults (spot, positionSize 10%, leverage 1, ...). "+
				"Needs mcp:paper for a paper account, mcp:live for an exchange connection: call check_auth first."+free+
				" Answers the bot once the controller has projected it (state ready, within "+CreateWait.String()+
				" normally), else its id and state pending: get_bot shows it moments later. Errors: INVALID_PARAMETER "+
				"naming the field (bad value, unknown setting, a name already taken, a rule of the bot's spec), "+
				"INSUFFICIENT_SCOPE."),
			mcp.WithToolAnnotation(changeAnnotation("Create bot", false, false)),
			mcp.WithRawOutputSchema(json.RawMessage(botChangeOutput))),
			Scope: auth.ScopePaper, ScopeFor: createScope, Venue: true, CreatesBot: true, ScopeRule: "mcp:live for an exchange account",
			RaisesSize: createRaises, Changes: true, Handler: s.createBot},
		{Def: rawInputTool("update_bot", botInputSchema(`"botId": {"type": "string", "description": "the bot's id (list_bots lists yours)"}`, "botId"),
			mcp.WithDescription("Change settings of one of your bots: give botId and only the settings to change "+
				"(a JSON merge patch of its spec: null removes a setting, which then takes its default). "+
				"Moving the bot to an exchange connection needs mcp:live."+venue+free+
				" The controller applies the change within moments. Errors: NOT_FOUND, MANAGED_BY_GITOPS (a bot applied "+
				"from a Git repository: change it there), INVALID_PARAMETER naming the field, INSUFFICIENT_SCOPE."),
			mcp.WithToolAnnotation(changeAnnotation("Update bot", false, true)),
			mcp.WithRawOutputSchema(json.RawMessage(botChangeOutput))),
			Scope: auth.ScopePaper, ScopeFor: s.updateScope, Venue: true, ScopeRule: "mcp:live on an exchange bot or when moving it to an exchange account",
			RaisesSize: s.updateRaises, Changes: true, Handler: s.updateBot},
		{Def: mcp.NewTool("delete_bot",
			mcp.WithDescription("Delete one of your bots for good: its webhook stops (BOT_DELETED) and its runtime state is "+
				"removed; open positions stay on the account. Ask the user first, then pass confirm: true."+venue+free+
				" Errors: NOT_FOUND, MANAGED_BY_GITOPS, INVALID_PARAMETER (confirm not true), INSUFFICIENT_SCOPE."),
			botID,
			mcp.WithBoolean("confirm", mcp.Required(), mcp.Description("must be true: the user has approved the deletion")),
			mcp.WithToolAnnotation(changeAnnotation("Delete bot", true, true)),
			mcp.WithRawOutputSchema(json.RawMessage(botDoneOutput))),
			Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, ScopeRule: "mcp:live on an exchange bot",
			Changes: true, Handler: s.deleteBot},
		{Def: mcp.NewTool("pause_bot",
			mcp.WithDescription("Pause one of your bots until resumed: it refuses new entries (BOT_PAUSED); open positions "+
				"stay. Works on GitOps bots too, and no sync undoes it. A bot already paused for another reason stays so."+
				venue+free+" Errors: NOT_FOUND, INSUFFICIENT_SCOPE."),
			botID,
			mcp.WithToolAnnotation(changeAnnotation("Pause bot", false, true)),
			mcp.WithRawOutputSchema(json.RawMessage(pauseOutput))),
			Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, ScopeRule: "mcp:live on an exchange bot",
			Changes: true, Handler: s.pauseBot},
		{Def: mcp.NewTool("resume_bot",
			mcp.WithDescription("Resume one of your paused bots. A manual pause ends at once; a pause for errors, risk or a "+
				"downgrade is handed to the controller, which lifts it within moments if its rule allows (a downgrade "+
				"pause only with the tier)."+venue+free+" Errors: NOT_FOUND, INSUFFICIENT_SCOPE."),
			botID,
			mcp.WithToolAnnotation(changeAnnotation("Resume bot", false, true)),
			mcp.WithRawOutputSchema(json.RawMessage(pauseOutput))),
			Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, ScopeRule: "mcp:live on an exchange bot",
			Changes: true, Handler: s.resumeBot},
		{Def: mcp.NewTool("regenerate_webhook",
			mcp.WithDescription("Give one of your bots a new webhook URL: the old one answers INVALID_WEBHOOK once the "+
				"controller has made the new one (moments later; get_webhook_url then answers it). Update the URL in "+
				"TradingView or wherever signals come from."+venue+free+
				" Errors: NOT_FOUND, MANAGED_BY_GITOPS, INSUFFICIENT_SCOPE."),
			botID,
			mcp.WithToolAnnotation(changeAnnotation("Regenerate webhook", true, false)),
			mcp.WithRawOutputSchema(json.RawMessage(botDoneOutput))),
			Scope: auth.ScopePaper, ScopeFor: s.botVenueScope, Venue: true, ScopeRule: "mcp:live on an exchange bot",
			Changes: true, Handler: s.regenerateWebhook},
	}
}

// createScope is create_bot's scope: by the kind of the account it names.
func createScope(_ context.Context, _ string, args map[string]any) (string, error) {
	account, _ := args["account"].(map[string]any)
	kind, _ := account["kind"].(string)
	return venueScope(kind), nil
}

// updateScope is update_bot's scope: the bot's venue, and mcp:live for a move to an
// exchange account.
func (s *Server) updateScope(ctx context.Context, userID string, args map[string]any) (string, error) {
	need, err := s.botVenueScope(ctx, userID, args)
	if err != nil {
		return "", err
	}
	if to, _ := createScope(ctx, userID, args); to == auth.ScopeLive {
		return to, nil
	}
	return need, nil
}

// createRaises is create_bot's RaisesSize: a new bot's entries are raised from nothing.
func createRaises(context.Context, string, map[string]any) (bool, error) { return true, nil }

// Defaults of a bot's entries when its spec names none (the CRD's).
const (
	defaultPositionSize = "10%"
	defaultLeverage     = 1
)

// updateRaises is update_bot's RaisesSize: the patch moves the bot onto an exchange
// account, or sets positionSize above the bot's (a change between a percentage and an
// amount counts as raising, and null restores the default), or leverage above it. A bot that is missing or another user's raises nothing:
// the handler answers NOT_FOUND.
func (s *Server) updateRaises(ctx context.Context, userID string, args map[string]any) (bool, error) {
	size, hasSize := args["positionSize"]
	lev, hasLev := args["leverage"]
	dest, _ := createScope(ctx, userID, args)
	if !hasSize && !hasLev && dest != auth.ScopeLive {
		return false, nil
	}
	owner, err := s.ownerOf(ctx, userID)
	if err != nil {
		return false, err
	}
	id, _ := args["botId"].(string)
	bot, err := registry.Owned(ctx, s.o.Bots, id, owner)
	if errors.Is(err, registry.ErrBotNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if dest == auth.ScopeLive && bot.Account.Kind != registry.AccountExchange {
		return true, nil // onto real money: raised from nothing
	}
	if hasSize {
		to, _ := size.(string)
		if size == nil {
			to = defaultPositionSize
		}
		from := cmp.Or(bot.PositionSize, defaultPositionSize)
		if sizeAbove(to, from) {
			return true, nil
		}
	}
	if hasLev {
		to := float64(defaultLeverage)
		if n, ok := lev.(float64); ok {
			to = n
		}
		if to > float64(max(bot.Leverage, defaultLeverage)) {
			return true, nil
		}
	}
	return false, nil
}

// sizeAbove reports whether positionSize to sizes entries above from: a larger value in
// the same unit, or another unit (a percentage and a base amount cannot be compared). A
// size that does not parse is the handler's to refuse.
func sizeAbove(to, from string) bool {
	t, err := order.ParseAmount(to)
	if err != nil || t == nil {
		return false
	}
	f, err := order.ParseAmount(from)
	if err != nil || f == nil || f.Percent != t.Percent {
		return true
	}
	return t.Value.GreaterThan(f.Value.Decimal)
}

// caller is the fleet caller of the request: its user and canonical e-mail.
func (s *Server) caller(ctx context.Context) (fleet.Caller, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return fleet.Caller{}, errs.New(errs.Unauthorized, "no caller")
	}
	owner, err := s.ownerOf(ctx, p.UserID)
	if err != nil {
		return fleet.Caller{}, err
	}
	return fleet.Caller{UserID: p.UserID, Email: owner}, nil
}

func (s *Server) createBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const tool = "create_bot"
	args := req.GetArguments()
	name, _ := args["name"].(string)
	if name == "" {
		return s.toolError(tool, errs.New(errs.InvalidParameter, "name: required, the new bot's name")), nil
	}
	if _, ok := args["account"]; !ok {
		return s.toolError(tool, errs.New(errs.InvalidParameter, "account: required, {kind: paper or exchange, name} ({kind: paper} alone trades on your paper account)")), nil
	}
	fields, err := specPatch(args, "name")
	if err != nil {
		return s.toolError(tool, err), nil
	}
	spec, err := fleet.SpecOf(fields)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	c, err := s.caller(ctx)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	bot, err := s.o.Fleet.Create(ctx, c, name, spec)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	out := botChange{ID: string(bot.UID), Name: bot.Name, Namespace: bot.Namespace, State: StatePending, Spec: bot.Spec,
		Message: "created; the controller has not projected it yet: get_bot shows it within moments"}
	if p, ok := s.o.Fleet.WaitProjected(ctx, c, out.ID, CreateWait); ok {
		out.State, out.Bot, out.Message = StateReady, &p, "created"
	}
	return structured(out)
}

func (s *Server) updateBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const tool = "update_bot"
	id, err := botIDArg(req)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	fields, err := specPatch(req.GetArguments(), "botId")
	if err != nil {
		return s.toolError(tool, err), nil
	}
	if len(fields) == 0 {
		return s.toolError(tool, errs.New(errs.InvalidParameter, "give at least one setting to change")), nil
	}
	patch, err := json.Marshal(fields)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	c, err := s.caller(ctx)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	bot, err := s.o.Fleet.Update(ctx, c, id, patch)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	return structured(botChange{ID: string(bot.UID), Name: bot.Name, Namespace: bot.Namespace, Spec: bot.Spec,
		Message: "updated; the controller applies the change within moments"})
}

func (s *Server) deleteBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const tool = "delete_bot"
	id, err := botIDArg(req)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	if ok, _ := req.GetArguments()["confirm"].(bool); !ok {
		return s.toolError(tool, errs.New(errs.InvalidParameter,
			"confirm must be true: ask the user to approve deleting the bot, then call again with confirm true")), nil
	}
	c, err := s.caller(ctx)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	if err := s.o.Fleet.Delete(ctx, c, id); err != nil {
		return s.toolError(tool, err), nil
	}
	return structured(botDone{BotID: id, Message: "deleted; its webhook answers BOT_DELETED"})
}

func (s *Server) pauseBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.pauseCall(ctx, req, "pause_bot", s.o.Fleet.Pause)
}

func (s *Server) resumeBot(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.pauseCall(ctx, req, "resume_bot", s.o.Fleet.Resume)
}

// pauseCall runs a pause or resume and answers the runtime pause in force afterwards.
func (s *Server) pauseCall(ctx context.Context, req mcp.CallToolRequest, tool string,
	do func(context.Context, fleet.Caller, string) error) (*mcp.CallToolResult, error) {
	id, err := botIDArg(req)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	c, err := s.caller(ctx)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	if err := do(ctx, c, id); err != nil {
		return s.toolError(tool, err), nil
	}
	p, err := s.o.Bots.ReadPause(ctx, id, s.o.Now())
	if err != nil {
		return s.toolError(tool, err), nil
	}
	out := pauseState{BotID: id, Message: "active: signals are taken"}
	if p != nil {
		out.Paused, out.Reason = true, string(p.Reason)
		out.Message = "paused: new entries answer BOT_PAUSED"
		if tool == "resume_bot" {
			out.Message = "paused (" + out.Reason + "): the controller lifts it within moments if its rule allows"
		}
	}
	return structured(out)
}

func (s *Server) regenerateWebhook(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	const tool = "regenerate_webhook"
	id, err := botIDArg(req)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	c, err := s.caller(ctx)
	if err != nil {
		return s.toolError(tool, err), nil
	}
	if err := s.o.Fleet.RegenerateWebhook(ctx, c, id); err != nil {
		return s.toolError(tool, err), nil
	}
	return structured(botDone{BotID: id,
		Message: "a new webhook URL is being made: the old one stops within moments; get_webhook_url answers the new one"})
}
