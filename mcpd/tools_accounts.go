package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/registry"
)

// connectionSchema is credentials.View.
const connectionSchema = `{"type": "object",
  "required": ["id", "namespace", "name", "exchange", "testnet", "status", "permissions", "markets", "validatedAt"],
  "properties": {
    "id": {"type": "string", "description": "the connection's id: a bot's account id, get_candles' exchangeId"},
    "namespace": {"type": "string"}, "name": {"type": "string"},
    "exchange": {"type": "string", "enum": ["binance", "bybit", "okx"]}, "testnet": {"type": "boolean"},
    "status": {"type": "string", "enum": ["ready", "not_ready"], "description": "ready: the exchange accepted the key and its permissions"},
    "reason": {"type": "string", "description": "the validation result: Validated, WithdrawalPermissionEnabled, InvalidCredentials, ..."},
    "permissions": {"type": "array", "items": {"type": "string"}},
    "markets": {"type": "array", "items": {"type": "string", "enum": ["spot", "futures"]}, "description": "market kinds the key may trade"},
    "validatedAt": {"type": "integer", "description": "Unix ms of the exchange's last answer about the key; 0 never"}}}`

// balancesSchema is one account's balances as get_portfolio reads them.
const balancesSchema = `{"type": "object", "required": ["id", "name", "kind", "currency", "balances"],
  "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string", "enum": ["paper", "exchange"]},
    "exchange": {"type": "string"}, "currency": {"type": "string"},
    "balances": {"type": "array", "items": {"type": "object", "required": ["asset", "wallet", "free", "locked", "total"],
      "properties": {"asset": {"type": "string"}, "wallet": {"type": "string", "enum": ["unified", "spot", "futures"]},
        "free": {"type": "number"}, "locked": {"type": "number", "description": "held by open orders or used as margin"},
        "total": {"type": "number"}}}},
    "error": {"type": "object", "description": "why the account could not be read; balances are then empty",
      "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}`

// paperAccountSchema is paperAccountView.
const paperAccountSchema = `{"type": "object",
  "required": ["id", "namespace", "name", "currency", "initialBalance", "feeRate", "balances", "equity", "unrealisedPnl", "realisedPnl", "nextRefillAt"],
  "properties": {
    "id": {"type": "string", "description": "the account's id: a bot's account id"},
    "namespace": {"type": "string"}, "name": {"type": "string"}, "currency": {"type": "string"},
    "initialBalance": {"type": "number"}, "feeRate": {"type": "number"},
    "balances": ` + `{"type": "array", "items": {"type": "object"}}` + `,
    "equity": {"type": ["number", "null"], "description": "in USDT, as get_portfolio values it; null when the account could not be valued"},
    "unrealisedPnl": {"type": ["number", "null"]}, "realisedPnl": {"type": ["number", "null"]},
    "lastRefillAt": {"type": "string", "format": "date-time", "description": "absent when never refilled"},
    "nextRefillAt": {"type": "string", "format": "date-time", "description": "when a refill is next allowed (24 hours after the last)"},
    "error": {"type": "object", "description": "why the account could not be valued; equity and P&L are then null, balances empty",
      "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}`

// accountTools are the tools over the caller's accounts: exchange connections, paper
// accounts and balances.
func (s *Server) accountTools() []Tool {
	arr := func(name, item string) json.RawMessage {
		return json.RawMessage(`{"type": "object", "required": ["` + name + `"], "properties": {"` + name +
			`": {"type": "array", "items": ` + item + `}, "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`)
	}
	return []Tool{
		{Def: mcp.NewTool("list_exchange_connections", append([]mcp.ToolOption{
			mcp.WithDescription("Your exchange connections (API keys on Binance, Bybit or OKX), by id, a page at a time: exchange, " +
				"testnet, whether the exchange accepted the key (status, reason), its permissions and the markets it may " +
				"trade. No credential is ever shown. Errors: INVALID_PARAMETER (limit, cursor)."),
			mcp.WithToolAnnotation(readOnly("List exchange connections")),
			mcp.WithRawOutputSchema(arr("connections", connectionSchema))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listConnections},
		{Def: mcp.NewTool("get_exchange_connection",
			mcp.WithDescription("One of your exchange connections by id: exchange, testnet, validation status and reason, "+
				"permissions, markets. No credential is ever shown. Errors: NOT_FOUND (no such connection of yours)."),
			mcp.WithToolAnnotation(readOnly("Get exchange connection")),
			mcp.WithString("connectionId", mcp.Required(), mcp.Description("the connection's id (list_exchange_connections)")),
			mcp.WithRawOutputSchema(json.RawMessage(connectionSchema))),
			Scope: auth.ScopeRead, Handler: s.getConnection},
		{Def: mcp.NewTool("list_paper_accounts", append([]mcp.ToolOption{
			mcp.WithDescription("Your paper trading accounts, by id, a page at a time: balances, equity and P&L in USDT " +
				"exactly as get_portfolio values them, the initial balance and fee rate, the last refill and when the " +
				"next refill is allowed (24 hours after the last). Errors: INVALID_PARAMETER (limit, cursor)."),
			mcp.WithToolAnnotation(readOnly("List paper accounts")),
			mcp.WithRawOutputSchema(arr("accounts", paperAccountSchema))}, pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listPaperAccounts},
		{Def: mcp.NewTool("get_paper_account",
			mcp.WithDescription("One of your paper accounts by id: balances, equity and P&L as get_portfolio values them, "+
				"the last refill and when the next is allowed. Errors: NOT_FOUND (no such account of yours)."),
			mcp.WithToolAnnotation(readOnly("Get paper account")),
			mcp.WithString("accountId", mcp.Required(), mcp.Description("the account's id (list_paper_accounts)")),
			mcp.WithRawOutputSchema(json.RawMessage(paperAccountSchema))),
			Scope: auth.ScopeRead, Handler: s.getPaperAccount},
		{Def: mcp.NewTool("get_balances",
			mcp.WithDescription("Balances (free, locked, total per asset and wallet) of your paper accounts and exchange "+
				"connections, the figures get_portfolio shows: all of them, one account (accountId), or the account a bot "+
				"trades on (botId). An exchange connection's balances are read from the exchange (cached a few seconds); "+
				"one that cannot be read carries an error and no balances. Errors: NOT_FOUND (no such account or bot "+
				"of yours), INVALID_PARAMETER (both accountId and botId)."),
			mcp.WithToolAnnotation(readOnly("Get balances")),
			mcp.WithString("accountId", mcp.Description("a paper account's or exchange connection's id; omit for all")),
			mcp.WithString("botId", mcp.Description("a bot's id: the balances of the account it trades on")),
			mcp.WithRawOutputSchema(arr("accounts", balancesSchema))),
			Scope: auth.ScopeRead, Handler: s.getBalances},
	}
}

var errConnectionNotFound = errs.New(errs.NotFound, "exchange connection not found")

func (s *Server) listConnections(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_exchange_connections", err), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("list_exchange_connections", err), nil
	}
	conns, err := s.conns.ListByOwner(ctx, owner)
	if err != nil {
		return s.toolError("list_exchange_connections", err), nil
	}
	conns, next := paginate(conns, func(c credentials.Connection) string { return c.UID }, p)
	views := make([]credentials.View, len(conns))
	for i, c := range conns {
		views[i] = c.View()
	}
	return structured(struct {
		Connections []credentials.View `json:"connections"`
		NextCursor  string             `json:"nextCursor,omitempty"`
	}{views, next})
}

func (s *Server) getConnection(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("connectionId", "")
	if id == "" {
		return s.toolError("get_exchange_connection", errs.New(errs.InvalidParameter,
			"connectionId is required: the id of one of your exchange connections (list_exchange_connections lists them)")), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_exchange_connection", err), nil
	}
	c, err := s.conns.OwnedBy(ctx, id, owner)
	if errors.Is(err, credentials.ErrNotFound) {
		err = errConnectionNotFound
	}
	if err != nil {
		return s.toolError("get_exchange_connection", err), nil
	}
	return structured(c.View())
}

// paperAccountView is a paper account: its settings and refill times from the paper
// exchange, its balances and figures from the portfolio.
type paperAccountView struct {
	ID             string              `json:"id"`
	Namespace      string              `json:"namespace"`
	Name           string              `json:"name"`
	Currency       string              `json:"currency"`
	InitialBalance httpapi.Number      `json:"initialBalance"`
	FeeRate        httpapi.Number      `json:"feeRate"`
	Balances       []portfolio.Balance `json:"balances"`
	Equity         *httpapi.Number     `json:"equity"`
	UnrealisedPnl  *httpapi.Number     `json:"unrealisedPnl"`
	RealisedPnl    *httpapi.Number     `json:"realisedPnl"`
	LastRefillAt   *time.Time          `json:"lastRefillAt,omitempty"`
	NextRefillAt   time.Time           `json:"nextRefillAt"`
	Error          *portfolio.Error    `json:"error,omitempty"`
}

// paperAccounts are the owner's paper accounts (one when id is given), as
// portfolio.PaperAccounts joins them.
func (s *Server) paperAccounts(ctx context.Context, owner, id string) ([]paperAccountView, error) {
	now := s.o.Now()
	accts, err := s.o.Portfolio.PaperAccounts(ctx, owner, id, now.Truncate(time.Millisecond))
	if err != nil {
		return nil, err
	}
	out := make([]paperAccountView, 0, len(accts))
	for _, p := range accts {
		st, a := p.State, p.Valued
		v := paperAccountView{ID: st.ID, Namespace: st.Namespace, Name: st.Name, Currency: p.Currency,
			InitialBalance: httpapi.Num(st.InitialBalance), FeeRate: httpapi.Num(st.FeeRate), Balances: a.Balances, Equity: a.Equity,
			UnrealisedPnl: a.UnrealisedPnl, RealisedPnl: a.RealisedPnl, Error: a.Error, NextRefillAt: p.NextRefillAt.UTC()}
		if !st.LastRefillAt.IsZero() {
			last := st.LastRefillAt.UTC()
			v.LastRefillAt = &last
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Server) listPaperAccounts(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_paper_accounts", err), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("list_paper_accounts", err), nil
	}
	accts, err := s.paperAccounts(ctx, owner, "")
	if err != nil {
		return s.toolError("list_paper_accounts", err), nil
	}
	accts, next := paginate(accts, func(a paperAccountView) string { return a.ID }, p)
	if accts == nil {
		accts = []paperAccountView{}
	}
	return structured(struct {
		Accounts   []paperAccountView `json:"accounts"`
		NextCursor string             `json:"nextCursor,omitempty"`
	}{accts, next})
}

func (s *Server) getPaperAccount(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("accountId", "")
	if id == "" {
		return s.toolError("get_paper_account", errs.New(errs.InvalidParameter,
			"accountId is required: the id of one of your paper accounts (list_paper_accounts lists them)")), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_paper_account", err), nil
	}
	accts, err := s.paperAccounts(ctx, owner, id)
	if err != nil {
		return s.toolError("get_paper_account", err), nil
	}
	if len(accts) == 0 {
		return s.toolError("get_paper_account", errs.New(errs.NotFound, "paper account not found")), nil
	}
	return structured(accts[0])
}

// accountBalances is one account's balances, the portfolio's figures.
type accountBalances struct {
	ID       string              `json:"id"`
	Name     string              `json:"name"`
	Kind     string              `json:"kind"`
	Exchange string              `json:"exchange,omitempty"`
	Currency string              `json:"currency"`
	Balances []portfolio.Balance `json:"balances"`
	Error    *portfolio.Error    `json:"error,omitempty"`
}

func (s *Server) getBalances(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	accountID := req.GetString("accountId", "")
	botID := req.GetString("botId", "")
	if accountID != "" && botID != "" {
		return s.toolError("get_balances", errs.New(errs.InvalidParameter, "give accountId or botId, not both")), nil
	}
	owner, err := s.owner(ctx)
	if err != nil {
		return s.toolError("get_balances", err), nil
	}
	sel := portfolio.Select{ID: accountID}
	if botID != "" {
		bot, err := registry.Owned(ctx, s.o.Bots, botID, owner)
		if err != nil {
			return s.toolError("get_balances", err), nil
		}
		sel = portfolio.Select{Kind: portfolio.KindPaper, ID: bot.Account.ID}
		if bot.Account.Kind == registry.AccountExchange {
			sel.Kind = portfolio.KindExchange
		}
		if sel.ID == "" {
			return s.toolError("get_balances", errs.New(errs.NotFound, "the bot's account is not resolved yet")), nil
		}
	}
	accts, err := s.o.Portfolio.Accounts(ctx, owner, sel)
	if err != nil {
		return s.toolError("get_balances", err), nil
	}
	if sel.ID != "" && len(accts) == 0 {
		return s.toolError("get_balances", errs.New(errs.NotFound, "account not found")), nil
	}
	out := make([]accountBalances, len(accts))
	for i, a := range accts {
		out[i] = accountBalances{ID: a.ID, Name: a.Name, Kind: a.Kind, Exchange: a.Exchange, Currency: a.Currency,
			Balances: a.Balances, Error: a.Error}
	}
	return structured(struct {
		Accounts []accountBalances `json:"accounts"`
	}{out})
}
