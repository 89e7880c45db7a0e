package mcpd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sigops/sigops/runtime/errs"
)

// Every tool call's arguments are checked once, strictly, against the shape of the tool's
// own input schema before anything reads them: the scope check (HTTP and inside the call)
// and the handler then read the same checked map. Strict means exact keys: a key the
// schema does not list is refused, so that no later decoding (encoding/json matches struct
// fields case-insensitively) can read a value the scope check did not see
// ("AcknowledgeCost"). The shape is the keys, the JSON types and the nesting; the value
// rules of the schema (required keys, enums, bounds, patterns) stay with the tool, which answers them with the spec's own codes (INVALID_ACTION, INVALID_SYMBOL,
// INVALID_AMOUNT) rather than a generic INVALID_PARAMETER. The validator is
// santhosh-tekuri/jsonschema (JSON Schema 2020-12, the dialect MCP tool schemas use by
// default), not a hand-written one; the tests check the tools' answers against their
// output schemas with it too.

// argsSchemaURL names a tool's compiled input schema inside its compiler.
const argsSchemaURL = "mem://tool/input.json"

// compileArgs compiles the shape of def's input schema (shapeOf), every object of it
// closed to keys it does not list.
func compileArgs(def mcp.Tool) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	var whole struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(raw, &whole); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(whole.InputSchema))
	if err != nil {
		return nil, err
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("input schema of %s is not an object", def.Name)
	}
	if _, ok := root["properties"]; !ok {
		root["properties"] = map[string]any{}
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(argsSchemaURL, shapeOf(root)); err != nil {
		return nil, err
	}
	return c.Compile(argsSchemaURL)
}

// shapeKeywords are the keywords shapeOf keeps: what a value's structure is. The others
// (required, enum, bounds, patterns, formats) are the tool's to check and answer.
var shapeKeywords = map[string]bool{"type": true, "properties": true, "additionalProperties": true,
	"items": true, "prefixItems": true, "anyOf": true, "oneOf": true, "allOf": true}

// shapeOf is schema reduced to shapeKeywords, with every object schema that lists
// properties and says nothing of others closed to them (additionalProperties false).
func shapeOf(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		return schema // true or false
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !shapeKeywords[k] {
			continue
		}
		switch k {
		case "properties":
			props, _ := v.(map[string]any)
			shaped := make(map[string]any, len(props))
			for name, p := range props {
				shaped[name] = shapeOf(p)
			}
			out[k] = shaped
		case "items", "additionalProperties":
			out[k] = shapeOf(v)
		case "prefixItems", "anyOf", "oneOf", "allOf":
			list, _ := v.([]any)
			shaped := make([]any, len(list))
			for i, p := range list {
				shaped[i] = shapeOf(p)
			}
			out[k] = shaped
		default:
			out[k] = v
		}
	}
	if _, ok := out["properties"]; ok {
		if _, set := out["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out
}

// checkedArgs is a call's arguments (as mcp-go decoded them) once checked against t's
// schema: the map the scope check and the handler read. Absent arguments are an empty
// object; anything but an object, or an object the schema refuses, is INVALID_PARAMETER
// naming the first offending parameter. The shape has no numeric bounds, so the decoded
// float64s are checked as they are (an integral float64 is a JSON Schema integer).
func (t Tool) checkedArgs(args any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	m, ok := args.(map[string]any)
	if !ok {
		return nil, errs.New(errs.InvalidParameter, "arguments must be a JSON object of %s's parameters", t.Def.Name).
			WithDetails(map[string]any{"parameter": "arguments"})
	}
	if t.args == nil {
		return m, nil
	}
	if err := t.args.Validate(m); err != nil {
		return nil, argsError(t.Def.Name, err)
	}
	return m, nil
}

// checkRaw checks arguments as the HTTP scope check reads them (raw JSON, decoded as
// mcp-go decodes them): the checked object, or false when they are not one the tool
// accepts.
func (t Tool) checkRaw(raw json.RawMessage) (map[string]any, bool) {
	var v any
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	m, err := t.checkedArgs(v)
	return m, err == nil
}

// englishMessages words the validator's messages.
var englishMessages = message.NewPrinter(language.English)

// argsError is a validation failure as INVALID_PARAMETER: the deepest first cause, with
// the parameter's path in details.parameter (an unknown key names itself).
func argsError(tool string, err error) error {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return errs.New(errs.InvalidParameter, "the arguments of %s do not match its input schema", tool)
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	path := slices.Clone(ve.InstanceLocation)
	what := ve.ErrorKind.LocalizedString(englishMessages)
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			path = append(path, k.Properties[0])
			what = fmt.Sprintf("not a parameter of %s (names are exact and case-sensitive)", tool)
		}
	case *kind.Type:
		what = fmt.Sprintf("must be %s, not %s", strings.Join(k.Want, " or "), k.Got)
	}
	param := strings.Join(path, ".")
	if param == "" {
		param = "arguments"
	}
	return errs.New(errs.InvalidParameter, "%s: %s", param, what).WithDetails(map[string]any{"parameter": param})
}
