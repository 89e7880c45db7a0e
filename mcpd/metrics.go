package mcpd

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	calls    *prometheus.CounterVec
	// auditFailures counts changing calls whose audit record could not be written.
	auditFailures prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_mcp_requests_total",
			Help: "Requests to /mcp by outcome: served, unauthorized, tier, insufficient_scope, rate_limited, unavailable.",
		}, []string{"outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_mcp_tool_calls_total",
			Help: "Tool calls that reached their tool, by tool and result (ok, error).",
		}, []string{"tool", "result"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_mcp_audit_failures_total",
			Help: "Calls of changing tools whose audit journal record could not be written (the call's answer stands).",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.calls, m.auditFailures} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// counted wraps a tool's handler to count its calls.
func (m *metrics) counted(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		result := "ok"
		if err != nil || (res != nil && res.IsError) {
			result = "error"
		}
		m.calls.WithLabelValues(name, result).Inc()
		return res, err
	}
}
