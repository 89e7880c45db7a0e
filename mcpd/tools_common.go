package mcpd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

// Page sizes of the list tools' limit argument (decision "MCP server" 7).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// cursorPrefix marks a cursor this server issued; the rest is the last key of the page.
const cursorPrefix = "k1:"

// readOnly is the annotation of a tool that changes nothing and answers the same to the same
// call while the data stays the same.
func readOnly(title string) mcp.ToolAnnotation {
	t, f := true, false
	return mcp.ToolAnnotation{Title: title, ReadOnlyHint: &t, DestructiveHint: &f, IdempotentHint: &t, OpenWorldHint: &f}
}

// pageOptions are the list tools' limit and cursor arguments.
func pageOptions() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithNumber("limit", mcp.Description("items per page, 1 to 100 (default 20)"), mcp.Min(1), mcp.Max(MaxPageSize)),
		mcp.WithString("cursor", mcp.Description("the nextCursor of the previous page; omit for the first page")),
	}
}

// page is a list call's position: the items after the key after, at most limit of them.
type page struct {
	after string
	limit int
}

// pageOf reads limit and cursor. A limit that is not a whole number in [1, MaxPageSize], or
// a cursor this server did not issue, is INVALID_PARAMETER.
func pageOf(req mcp.CallToolRequest) (page, error) {
	p := page{limit: DefaultPageSize}
	args := req.GetArguments()
	if v, ok := args["limit"]; ok && v != nil {
		f, isNum := v.(float64)
		if !isNum || f != math.Trunc(f) || f < 1 || f > MaxPageSize {
			return page{}, errs.New(errs.InvalidParameter, "limit must be a whole number from 1 to %d", MaxPageSize)
		}
		p.limit = int(f)
	}
	if v, ok := args["cursor"]; ok && v != nil && v != "" {
		s, isStr := v.(string)
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if !isStr || err != nil || !strings.HasPrefix(string(raw), cursorPrefix) || len(raw) == len(cursorPrefix) {
			return page{}, errs.New(errs.InvalidParameter,
				"cursor is not a nextCursor this server issued; list again without a cursor")
		}
		p.after = string(raw[len(cursorPrefix):])
	}
	return p, nil
}

// paginate sorts items by key and returns the page p asks for and the cursor of the next
// page (empty on the last). The cursor names the last key served, not a position, so that
// items added or removed between calls neither repeat nor skip the ones that stay. Keys are
// unique.
func paginate[T any](items []T, key func(T) string, p page) ([]T, string) {
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	start := 0
	if p.after != "" {
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > p.after })
	}
	end := min(start+p.limit, len(items))
	out := items[start:end]
	if end == len(items) || len(out) == 0 {
		return out, ""
	}
	return out, cursorOf(key(out[len(out)-1]))
}

// cursorOf is the cursor of a page that ends at key ("" for none: the last page).
func cursorOf(key string) string {
	if key == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key))
}

// toolError is a tool's error result: its text is a JSON object with the spec's error code,
// its numeric code where the spec gives one, and a message an agent can act on. A failure
// without a code is logged and answered as INTERNAL_ERROR without its Go text.
func (s *Server) toolError(tool string, err error) *mcp.CallToolResult {
	e, ok := errs.As(err)
	if !ok {
		s.o.Logger.Error("tool call failed", "tool", tool, "err", err)
		e = errs.New(errs.InternalError, "the server could not read the data; try again in a few seconds")
	}
	text, mErr := json.Marshal(e.Object())
	if mErr != nil {
		text = []byte(`{"code":"INTERNAL_ERROR","numericCode":5001,"message":"the answer could not be encoded"}`)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(string(text))}}
}

// structured is a tool's answer v as structured content and, for clients that read text
// only, the same JSON as text. v is encoded once: the structured content is those bytes
// (a json.RawMessage the response's encoder copies), not v encoded a second time.
func structured(v any) (*mcp.CallToolResult, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(json.RawMessage(text), string(text)), nil
}

// owner is the email (canonical form) of the user the request speaks for.
func (s *Server) owner(ctx context.Context) (string, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return "", errors.New("mcpd: no principal in the request context")
	}
	return s.ownerOf(ctx, p.UserID)
}

// botIDArg reads the required botId argument.
func botIDArg(req mcp.CallToolRequest) (string, error) { return botIDOf(req.GetArguments()) }

// botIDOf is the botId of args.
func botIDOf(args map[string]any) (string, error) {
	id, ok := args["botId"].(string)
	if !ok || id == "" {
		return "", errs.New(errs.InvalidParameter, "botId is required: the id of one of your bots (list_bots lists them)")
	}
	return id, nil
}
