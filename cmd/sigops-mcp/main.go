// Command sigops-mcp is the local stdio MCP client of sigops: desktop agents (Claude
// Desktop, Cursor, …) start it as an MCP server on stdin/stdout, and it bridges to the
// hosted MCP server over HTTPS (internal/mcpstdio). stdout is the MCP channel; logs go to
// stderr. Tokens stay in this process's memory.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sigops/sigops/internal/mcpstdio"
)

var version = "dev"

func main() {
	fs := flag.NewFlagSet("sigops-mcp", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	base := fs.String("base-url", env("SIGOPS_BASE_URL", mcpstdio.DefaultBaseURL), "{base_url} of sigops (env SIGOPS_BASE_URL)")
	mcpURL := fs.String("mcp-url", os.Getenv("SIGOPS_MCP_URL"), "{mcp_url}, the hosted MCP server's origin (env SIGOPS_MCP_URL; default: from the base URL's server card)")
	caFile := fs.String("ca-file", os.Getenv("SIGOPS_CA_FILE"), "PEM certificate authority to trust besides the system's, e.g. the local stack's bin/local/tls/cert.pem (env SIGOPS_CA_FILE)")
	debug := fs.Bool("debug", os.Getenv("SIGOPS_MCP_DEBUG") != "", "log at debug level (env SIGOPS_MCP_DEBUG)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := mcpstdio.New(mcpstdio.Options{BaseURL: *base, MCPURL: *mcpURL, CAFile: *caFile, Version: version, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sigops-mcp:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("sigops-mcp serving on stdio", "base_url", *base, "version", version)
	if err := b.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		log.Error("stdio", "error", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
