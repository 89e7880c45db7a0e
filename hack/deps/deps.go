//go:build tools

// Package deps pins the dependencies that later issues build on (chi for webhookd, mcp-go
// for mcpd, golang-jwt for authd) so that their versions are settled in go.mod now and
// `make vet` proves they compile together with the rest. Each import moves to real code when
// its daemon lands; the `tools` build tag keeps this file out of every binary.
package deps

import (
	_ "github.com/go-chi/chi/v5"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/mark3labs/mcp-go/server"
)
