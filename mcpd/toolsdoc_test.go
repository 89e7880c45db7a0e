package mcpd_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/lab"
)

var update = flag.Bool("update", false, "write docs/mcp-tools.md from the registry")

const toolsDoc = "../docs/mcp-tools.md"

// TestToolsDocIsCurrent fails when docs/mcp-tools.md differs from what the registry
// generates: a tool, scope, input or description changed without the page. `make docs-mcp`
// (go test ./mcpd -run TestToolsDocIsCurrent -update) writes it.
func TestToolsDocIsCurrent(t *testing.T) {
	s := newFullServer(t)
	got, err := mcpd.ToolsMarkdown(s.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(toolsDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(toolsDoc)
	if err != nil {
		t.Fatalf("%v: run `make docs-mcp`", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `make docs-mcp` and commit it", toolsDoc)
	}
}

// newFullServer is a server with every optional Go API set, so that every tool registers.
func newFullServer(t *testing.T) *mcpd.Server {
	t.Helper()
	f := newFixture(t)
	return f.server(t, func(o *mcpd.Options) {
		o.Candles = f.candlesService()
		o.Lab = lab.New(lab.Options{Redis: f.rdb, Users: f.users, Now: f.clk.Now})
		// Registration needs no API server: no tool is called.
		o.Fleet = fleet.New(fleet.Options{Redis: f.rdb, Now: f.clk.Now})
	})
}
