package mcpd

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/lab"
)

// jobSchema is lab.Job.
var jobSchema = `{"type": "object",
  "required": ["id", "state", "request", "experiments", "completed", "costUsd", "refundedUsd", "createdAt"],
  "properties": {
    "id": {"type": "string"}, "state": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
    "request": {"type": "object", "description": "the generate_strategy request the job runs"},
    "experiments": {"type": "integer"}, "completed": {"type": "integer"},
    "costUsd": {"type": "number", "description": "charged to the Strategy Lab wallet when queued"},
    "refundedUsd": {"type": "number", "description": "refunded for experiments that failed"},
    "createdAt": {"type": "string", "format": "date-time"}, "finishedAt": {"type": "string", "format": "date-time"},
    "result": ` + labResultSchema + `}}`

// labTools are get_strategy_job and list_strategy_jobs, when the server has a Lab.
func (s *Server) labTools() []Tool {
	if s.o.Lab == nil {
		return nil
	}
	return []Tool{
		{Def: mcp.NewTool("get_strategy_job",
			mcp.WithDescription("One of your Strategy Lab jobs (generate_strategy) by jobId: its state (queued, running, "+
				"done, failed), experiments completed, the cost charged and refunded, and once done the ranked result: "+
				"each experiment's in-sample figures (which ranked it) and out-of-sample figures, the best set's both side by "+
				"side, walk-forward folds when asked, and result.overfitting (level high: the in-sample best is more likely "+
				"than not no better than the median out of sample; weigh the out-of-sample figures). "+
				"Reading costs nothing. A running job: call again later. Errors: NOT_FOUND (no such job of yours)."),
			mcp.WithToolAnnotation(readOnly("Get strategy job")),
			mcp.WithString("jobId", mcp.Required(), mcp.Description("the job id generate_strategy answered")),
			mcp.WithRawOutputSchema(json.RawMessage(jobSchema))),
			Scope: auth.ScopeRead, Handler: s.getStrategyJob},
		{Def: mcp.NewTool("list_strategy_jobs", append([]mcp.ToolOption{
			mcp.WithDescription("Your Strategy Lab jobs, newest first, a page at a time (pass nextCursor as cursor to " +
				"read on), without their results (get_strategy_job has them). Reading costs nothing. Errors: " +
				"INVALID_PARAMETER (limit, cursor)."),
			mcp.WithToolAnnotation(readOnly("List strategy jobs")),
			mcp.WithRawOutputSchema(json.RawMessage(`{"type": "object", "required": ["jobs"], "properties": {
  "jobs": {"type": "array", "items": ` + jobSchema + `},
  "nextCursor": {"type": "string", "description": "pass as cursor for the next page; absent on the last page"}}}`))},
			pageOptions()...)...),
			Scope: auth.ScopeRead, Handler: s.listStrategyJobs},
	}
}

// userID is the ID of the user the request speaks for.
func userID(ctx context.Context) (string, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return "", errors.New("mcpd: no principal in the request context")
	}
	return p.UserID, nil
}

func (s *Server) getStrategyJob(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("jobId", "")
	if id == "" {
		return s.toolError("get_strategy_job", errs.New(errs.InvalidParameter,
			"jobId is required: the job id generate_strategy answered (list_strategy_jobs lists them)")), nil
	}
	uid, err := userID(ctx)
	if err != nil {
		return s.toolError("get_strategy_job", err), nil
	}
	job, err := s.o.Lab.Job(ctx, uid, id)
	if err != nil {
		return s.toolError("get_strategy_job", err), nil
	}
	return structured(job)
}

func (s *Server) listStrategyJobs(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := pageOf(req)
	if err != nil {
		return s.toolError("list_strategy_jobs", err), nil
	}
	uid, err := userID(ctx)
	if err != nil {
		return s.toolError("list_strategy_jobs", err), nil
	}
	jobs, next, err := s.o.Lab.Jobs(ctx, uid, p.after, p.limit)
	if err != nil {
		return s.toolError("list_strategy_jobs", err), nil
	}
	if jobs == nil {
		jobs = []lab.Job{}
	}
	return structured(struct {
		Jobs       []lab.Job `json:"jobs"`
		NextCursor string    `json:"nextCursor,omitempty"`
	}{jobs, cursorOf(next)})
}
