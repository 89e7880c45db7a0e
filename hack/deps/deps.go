//go:build tools

// Package deps keeps mcp-go in go.mod before any daemon imports it: mcpd is built on it,
// and pinning it now settles its version against the rest of the module, which `make vet`
// proves by compiling this file. The `tools` build tag keeps the file out of every binary.
// The import moves to mcpd's code when mcpd lands, and this file goes with it.
package deps

import (
	_ "github.com/mark3labs/mcp-go/server"
)
