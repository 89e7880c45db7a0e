package authd

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

// auditEntry is one audit journal entry as GET /api/user/audit answers it.
type auditEntry struct {
	ID         string          `json:"id"`
	Time       int64           `json:"time"`
	Channel    string          `json:"channel"`
	Tool       string          `json:"tool"`
	ClientID   string          `json:"clientId,omitempty"`
	ClientName string          `json:"clientName,omitempty"`
	Arguments  json.RawMessage `json:"arguments"`
	OK         bool            `json:"ok"`
	Code       string          `json:"code,omitempty"`
	Message    string          `json:"message,omitempty"`
}

// handleAudit is GET /api/user/audit?cursor=&limit=: the caller's audit journal (the
// changing MCP and dashboard calls made on the account), newest first, a page at a time.
// The caller is the bearer of the request's token, or the session cookie's user, as for
// /api/user/me; only the caller's own journal is reachable.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	userID, ok := s.requestUser(w, r)
	if !ok {
		return
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > audit.MaxPageSize {
			s.auditRefused(w, errs.New(errs.InvalidParameter, "limit must be a whole number from 1 to %d", audit.MaxPageSize))
			return
		}
		limit = n
	}
	entries, next, err := s.audit.List(r.Context(), userID, r.URL.Query().Get("cursor"), limit)
	if e, isCoded := errs.As(err); isCoded {
		s.auditRefused(w, e)
		return
	}
	if err != nil {
		s.meUnavailable(w, err)
		return
	}
	out := make([]auditEntry, len(entries))
	for i, e := range entries {
		out[i] = auditEntry{ID: e.ID, Time: e.Time.UnixMilli(), Channel: e.Channel, Tool: e.Tool, ClientID: e.ClientID,
			ClientName: e.ClientName, Arguments: e.Arguments, OK: e.Outcome.OK, Code: string(e.Outcome.Code), Message: e.Outcome.Message}
	}
	body := map[string]any{"entries": out, "retentionDays": int(s.audit.Retention().Hours() / 24)}
	if next != "" {
		body["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) auditRefused(w http.ResponseWriter, e *errs.Error) {
	writeJSON(w, e.Code.HTTPStatus(), failureBody{Error: e.Message, Code: string(e.Code), Timestamp: s.o.Now().UnixMilli()})
}

// requestUser is the user a request speaks for: the bearer of its Authorization header
// (judged by it alone), or its session cookie's user. It answers the refusal itself and
// returns false when there is none.
func (s *Server) requestUser(w http.ResponseWriter, r *http.Request) (string, bool) {
	if _, ok := r.Header["Authorization"]; ok {
		p, err := s.verifier.VerifyRequest(r)
		// The verifier takes both resources' tokens for /api/user/me; the journal is an API
		// resource, so a token bound to the MCP server (RFC 8707) is not one for it.
		if err == nil && !slices.Contains(p.Audience, s.apiResource) {
			err = auth.ErrInvalidToken
		}
		if err != nil {
			s.writeVerifyError(w, err)
			return "", false
		}
		return p.UserID, true
	}
	cur, err := s.currentSession(w, r)
	if err != nil {
		s.meUnavailable(w, err)
		return "", false
	}
	if !cur.live {
		auth.WriteUnauthorized(w, false, s.o.BaseURL+"/.well-known/oauth-protected-resource", s.o.Now().UnixMilli())
		return "", false
	}
	return cur.user.ID, true
}
