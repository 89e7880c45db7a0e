package mcpd

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/errs"
)

// botSpecProperties are the SignalBot spec fields an agent sets, as the JSON schema of
// create_bot's and update_bot's arguments. Types, patterns, bounds, enums and defaults are
// the CRD's (config/crd/bases, generated from api/v1alpha1; TestBotSpecSchemaMatchesCRD
// holds them equal); the CRD's CEL rules are checked by the API server, whose message the
// tools answer. account stands for the CRD's paperAccountRef / exchangeConnectionRef pair,
// and owner is always the caller.
const botSpecProperties = `{
  "account": {"type": "object", "required": ["kind"], "description": "where the bot trades: a paper account or an exchange connection of yours in your namespace, by name",
    "properties": {"kind": {"type": "string", "enum": ["paper", "exchange"], "description": "paper (simulated) or exchange (real money; needs mcp:live)"},
      "name": {"type": "string", "minLength": 1, "maxLength": 253, "description": "the PaperAccount's or ExchangeConnection's name; for paper it may be left out: your paper account \"paper\", made (10,000 USDT) on first use"}}},
  "market": {"type": "string", "enum": ["spot", "futures"], "default": "spot"},
  "symbol": {"type": "string", "pattern": "^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$", "description": "a fixed pair, BASE/QUOTE; signals may then omit it"},
  "positionSize": {"type": "string", "maxLength": 32, "pattern": "^[0-9]+(\\.[0-9]+)?%?$", "default": "10%", "description": "default size: a percentage of the available balance (above 0, at most 100: \"10%\") or a base amount above 0 (\"0.01\")"},
  "leverage": {"type": "integer", "minimum": 1, "maximum": 125, "default": 1, "description": "above 1 only with market futures"},
  "stopLoss": {"type": "string", "maxLength": 32, "pattern": "^[0-9]+(\\.[0-9]+)?%?$", "description": "default stop-loss: a price or a percentage from entry"},
  "takeProfit": {"type": "string", "maxLength": 32, "pattern": "^[0-9]+(\\.[0-9]+)?%?$", "description": "default take-profit: a price or a percentage from entry"},
  "dca": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "maxLevels": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5}}},
  "risk": {"type": "object", "description": "limits; absent fields mean no limit", "properties": {
    "maxExposure": {"type": "string", "maxLength": 32, "pattern": "^(0(\\.[0-9]+)?|1(\\.0+)?)$", "description": "largest fraction of the account in positions, above 0 and at most 1"},
    "dailyLossLimit": {"type": "string", "maxLength": 32, "pattern": "^[0-9]+(\\.[0-9]+)?$", "description": "realised loss in quote currency that pauses the bot until the next UTC day"},
    "maxConsecutiveLosses": {"type": "integer", "minimum": 1}}},
  "rateLimit": {"type": "object", "default": {}, "properties": {"perMinute": {"type": "integer", "minimum": 1, "maximum": 60000, "default": 60}, "burst": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10}}},
  "dedupeWindow": {"type": "string", "default": "0s", "description": "a duration (\"30s\"): identical signals within it are dropped; 0s is off"},
  "maxSignalAge": {"type": "string", "default": "60s", "description": "a duration: an entry older than this when executed fails SIGNAL_EXPIRED; 0s is off"},
  "reversals": {"type": "boolean", "default": true},
  "webhook": {"type": "object", "default": {}, "properties": {"enabled": {"type": "boolean", "default": true}}},
  "suspend": {"type": "boolean", "description": "true pauses the bot until set false"},
  "strategy": {"type": "object", "required": ["family", "timeframe"], "description": "a built-in strategy run on every closed candle; give only the chosen family's parameter block",
    "properties": {
      "family": {"type": "string", "enum": ["emaCrossover", "rsiReversion", "donchianBreakout", "bollingerReversion", "macdCrossover", "supertrend"]},
      "timeframe": {"type": "string", "enum": ["1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w"]},
      "symbol": {"type": "string", "pattern": "^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$"},
      "emaCrossover": {"type": "object", "properties": {"fastPeriod": {"type": "integer", "minimum": 2, "maximum": 100, "default": 12}, "slowPeriod": {"type": "integer", "minimum": 3, "maximum": 400, "default": 26}}},
      "rsiReversion": {"type": "object", "properties": {"period": {"type": "integer", "minimum": 2, "maximum": 100, "default": 14},
        "oversold": {"type": "string", "maxLength": 16, "pattern": "^[0-9]{1,3}(\\.[0-9]{1,8})?$", "default": "30"},
        "overbought": {"type": "string", "maxLength": 16, "pattern": "^[0-9]{1,3}(\\.[0-9]{1,8})?$", "default": "70"}}},
      "donchianBreakout": {"type": "object", "properties": {"period": {"type": "integer", "minimum": 5, "maximum": 200, "default": 20}, "exitPeriod": {"type": "integer", "minimum": 2, "maximum": 200, "default": 10}}},
      "bollingerReversion": {"type": "object", "properties": {"period": {"type": "integer", "minimum": 5, "maximum": 200, "default": 20}, "stdDev": {"type": "string", "maxLength": 16, "pattern": "^[0-9](\\.[0-9]{1,8})?$", "default": "2"}}},
      "macdCrossover": {"type": "object", "properties": {"fastPeriod": {"type": "integer", "minimum": 2, "maximum": 100, "default": 12}, "slowPeriod": {"type": "integer", "minimum": 3, "maximum": 400, "default": 26},
        "signalPeriod": {"type": "integer", "minimum": 2, "maximum": 100, "default": 9}}},
      "supertrend": {"type": "object", "properties": {"period": {"type": "integer", "minimum": 2, "maximum": 100, "default": 10},
        "multiplier": {"type": "string", "maxLength": 16, "pattern": "^[0-9]{1,2}(\\.[0-9]{1,8})?$", "default": "3"}}}}},
  "copyFrom": {"type": "object", "required": ["botRef"], "description": "copy another bot's fills, scaled by equity times ratio",
    "properties": {"botRef": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 253}, "namespace": {"type": "string", "maxLength": 63}}},
      "ratio": {"type": "string", "maxLength": 32, "pattern": "^[0-9]+(\\.[0-9]+)?$", "default": "1", "description": "above 0, at most 100"}}},
  "copyable": {"type": "boolean", "description": "let other owners' bots copy this one"}
}`

// BotSpecProperties is botSpecProperties for tests and docs: the spec fields create_bot
// and update_bot take.
func BotSpecProperties() json.RawMessage { return json.RawMessage(botSpecProperties) }

// specFields are the argument names botSpecProperties declares.
var specFields = func() map[string]bool {
	var props map[string]json.RawMessage
	if err := json.Unmarshal([]byte(botSpecProperties), &props); err != nil {
		panic("mcpd: botSpecProperties: " + err.Error())
	}
	out := make(map[string]bool, len(props))
	for k := range props {
		out[k] = true
	}
	return out
}()

// inputSchema is an object schema of botSpecProperties plus extra properties, with
// required names.
func botInputSchema(extra string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	props := strings.TrimSuffix(strings.TrimSpace(botSpecProperties), "}")
	return json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ` + string(req) +
		`, "properties": ` + props + `, ` + extra + `}}`)
}

// rawInputTool is mcp.NewTool with schema as its whole input schema: mcp-go refuses to
// encode a tool that has both its default InputSchema and a raw one.
func rawInputTool(name string, schema json.RawMessage, opts ...mcp.ToolOption) mcp.Tool {
	t := mcp.NewTool(name, opts...)
	t.InputSchema = mcp.ToolInputSchema{}
	t.RawInputSchema = schema
	return t
}

// specPatch turns the spec arguments of args (every key but skip) into the SignalBot spec
// JSON they stand for: account becomes paperAccountRef or exchangeConnectionRef (and, as a
// merge patch, null for the other). An argument the schema does not declare, or an account
// without a kind and name, is INVALID_PARAMETER naming it.
func specPatch(args map[string]any, skip ...string) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range args {
		switch {
		case slices.Contains(skip, k):
		case !specFields[k]:
			return nil, errs.New(errs.InvalidParameter, "%s: not a bot setting (the tool's input schema lists them)", k)
		case k == "account":
			if err := accountArg(out, v); err != nil {
				return nil, err
			}
		default:
			out[k] = v
		}
	}
	return out, nil
}

// accountArg reads the account argument, {kind: paper|exchange, name}, into fields
// (fleet.SetAccount).
func accountArg(fields map[string]any, v any) error {
	m, _ := v.(map[string]any)
	kind, _ := m["kind"].(string)
	name, _ := m["name"].(string)
	return fleet.SetAccount(fields, kind, name)
}
