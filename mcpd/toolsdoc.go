package mcpd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Tools is the server's tools in registration order (the order of the docs table).
func (s *Server) Tools() []Tool { return s.tools.List() }

// toolSchema is the part of a tool's JSON definition the docs table shows. It is read from
// the definition as mcp-go sends it in tools/list, so the table shows what agents see
// whether a tool's schema was built with options or written raw.
type toolSchema struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"inputSchema"`
	Annotations struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
		Idempotent  *bool `json:"idempotentHint"`
		OpenWorld   *bool `json:"openWorldHint"`
	} `json:"annotations"`
}

// ToolsMarkdown is docs/mcp-tools.md: every tool with the scope it needs, whether its calls
// are audited, its annotations and its inputs, generated from the registry so the page
// cannot drift from the code (mcpd's TestToolsDocIsCurrent fails when it is stale; `make
// docs-mcp` writes it).
func ToolsMarkdown(tools []Tool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("<!-- Generated from mcpd's tool registry by `make docs-mcp`; do not edit. -->\n")
	b.WriteString("# MCP tools\n\n")
	fmt.Fprintf(&b, "The hosted MCP server at `{mcp_url}/mcp` serves %d tools. Scopes are hierarchical "+
		"(`mcp:read` < `mcp:paper` < `mcp:live`); a user's bearer JWT is limited only by the tier. "+
		"A call above the token's scope answers HTTP 403 `insufficient_scope` naming the scope it needs. "+
		"Audited tools write every call to the caller's audit journal (arguments without secrets, outcome). "+
		"Arguments are checked against each tool's input schema before anything reads them: exact, case-sensitive "+
		"names (an unknown one is INVALID_PARAMETER naming it) and JSON types; the tools check values themselves. "+
		"A `symbol` may be written in any form the webhook takes (BTCUSDT, btc-usdt, BINANCE:BTCUSDT.P); answers use BASE/QUOTE. "+
		"A scope on an exchange bot also applies to a paper bot whose fills one of your exchange bots copies. "+
		"A connected app's calls above `mcp:read` are also bound by the limits the user set for it (consent page, "+
		"Connected apps): the bots it may act on, paper only or real money, orders per hour (exits are counted, never refused), "+
		"the USDT of real money it may commit in one order and in one UTC day (a live entry's notional as the executor sizes it, "+
		"a Strategy Lab charge; exits never refused), and the account's kill switch; a refusal is POLICY_LIMIT whose "+
		"`details.limit` is `bots`, `venue`, `ordersPerHour`, `orderNotional`, `dayNotional` or `killSwitch`, with `value`, "+
		"`used`, `requested` and `resetsAt`. A live entry the policy holds for the user's approval answers at once: "+
		"send_signal with message `Awaiting approval`, place_order with status `awaiting_approval`, each with an `approval` "+
		"object (state, expiresAt, reason); get_signal then shows `awaiting_approval`, `queued`, `rejected`, `expired` or "+
		"`refused` until the result. send_signal, place_order and close_position take `dryRun: true` (mcp:read suffices): "+
		"the sized order, reference price, fees, margin, each check's verdict and the policy's, with nothing queued or "+
		"counted. Reads are never limited.\n\n", len(tools))
	b.WriteString("| # | Tool | Scope | Audited | Hints | Inputs (* required) |\n|---|---|---|---|---|---|\n")
	defs := make([]toolSchema, len(tools))
	for i, t := range tools {
		raw, err := json.Marshal(t.Def)
		if err != nil {
			return nil, fmt.Errorf("mcpd: tool %s: %w", t.Def.Name, err)
		}
		if err := json.Unmarshal(raw, &defs[i]); err != nil {
			return nil, fmt.Errorf("mcpd: tool %s: %w", t.Def.Name, err)
		}
		d := defs[i]
		scope := "`" + t.Scope + "`"
		if t.ScopeRule != "" {
			scope += "; " + t.ScopeRule
		}
		audited := ""
		if t.Changes {
			audited = "yes"
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s | %s |\n", i+1, d.Name, cell(scope), audited, hints(d), cell(inputs(d)))
	}
	b.WriteString("\n## Descriptions\n\nWhat each tool tells an agent.\n")
	for _, d := range defs {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", d.Name, strings.TrimSpace(d.Description))
	}
	return b.Bytes(), nil
}

// hints is the tool's annotations that are true, or "" when it has none.
func hints(d toolSchema) string {
	var out []string
	for _, h := range []struct {
		name string
		v    *bool
	}{{"read-only", d.Annotations.ReadOnly}, {"destructive", d.Annotations.Destructive},
		{"idempotent", d.Annotations.Idempotent}, {"open-world", d.Annotations.OpenWorld}} {
		if h.v != nil && *h.v {
			out = append(out, h.name)
		}
	}
	return strings.Join(out, ", ")
}

// inputs lists the tool's arguments by name, required ones marked, with their types.
func inputs(d toolSchema) string {
	names := make([]string, 0, len(d.InputSchema.Properties))
	for n := range d.InputSchema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		p := d.InputSchema.Properties[n]
		mark := ""
		if slices.Contains(d.InputSchema.Required, n) {
			mark = "*"
		}
		typ := fmt.Sprint(p.Type)
		if p.Type == nil {
			typ = "any"
		}
		if len(p.Enum) > 0 {
			vals := make([]string, len(p.Enum))
			for j, v := range p.Enum {
				vals[j] = fmt.Sprint(v)
			}
			typ = strings.Join(vals, " / ")
		}
		out[i] = fmt.Sprintf("`%s`%s (%s)", n, mark, typ)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "\\|")
}
