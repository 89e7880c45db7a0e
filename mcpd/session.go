package mcpd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultSessionIdle is how long an MCP session lives without a request; each request
// starts the time again.
const DefaultSessionIdle = 24 * time.Hour

// sessionTimeout bounds one session read or write: a session check is on every request.
const sessionTimeout = 2 * time.Second

// errSession is every session refusal: unknown, expired, another user's, or unreadable.
// mcp-go answers it with 404, which tells a client to initialize again.
var errSession = errors.New("session not found")

// sessions holds MCP session IDs in Redis, each bound to the user whose token initialized
// it, so that any replica serves a session another one started and a session ID is of no
// use with another user's token. mcp-go keeps nothing of a session in memory between
// requests (every request gets an ephemeral session object), so the ID and its owner are
// all there is to share.
type sessions struct {
	rdb    redis.UniversalClient
	idle   time.Duration
	logger *slog.Logger
}

// ResolveSessionIdManager is the session manager of r's caller (mcp-go's resolver
// interface). Without a request (mcp-go's shutdown sweep) there is no caller, and the
// manager refuses every ID.
func (s *sessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	m := &userSessions{s: s, ctx: context.Background()}
	if r != nil {
		m.ctx = r.Context()
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			m.userID = p.UserID
		}
	}
	return m
}

// userSessions is mcp-go's session ID manager for one request's caller.
type userSessions struct {
	s      *sessions
	ctx    context.Context
	userID string
}

// Generate starts a session for the caller. A session that cannot be stored is logged:
// the client's next request then answers 404 and the client initializes again.
func (m *userSessions) Generate() string {
	id := "mcps_" + auth.RandomToken(24)
	if m.userID == "" {
		return id
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), sessionTimeout)
	defer cancel()
	if err := m.s.rdb.Set(ctx, store.MCPSession(id), m.userID, m.s.idle).Err(); err != nil {
		m.s.logger.Error("mcpd: session not stored", "err", err)
	}
	return id
}

// Validate accepts a session of the caller that has not expired, and starts its idle time
// again in the same command. A request that names no session is served: every tool takes
// what it needs from its arguments and the bearer token, so a client that does not keep
// the session ID (or a load balancer that strips it) loses nothing. One that names a
// session must name a live one of the same user.
func (m *userSessions) Validate(id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	if m.userID == "" {
		return false, errSession
	}
	var owner string
	var err error
	if pre, ok := m.ctx.Value(prefetchedKey{}).(prefetched); ok && pre.id == id {
		owner, err = pre.cmd.Result()
	} else {
		ctx, cancel := context.WithTimeout(m.ctx, sessionTimeout)
		defer cancel()
		owner, err = m.s.rdb.GetEx(ctx, store.MCPSession(id), m.s.idle).Result()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		m.s.logger.Error("mcpd: session not read", "err", err)
	}
	if err != nil || owner != m.userID {
		return false, errSession
	}
	return false, nil
}

// prefetched is the session a request names, read (and its idle time started again) in
// the round trip that checked the request's token, for Validate to use.
type prefetched struct {
	id  string
	cmd *redis.StringCmd
}

type prefetchedKey struct{}

// prefetch queues on pipe the read of session id (none when id is empty) and returns what
// puts its result in a request's context once the pipeline has run.
func (s *sessions) prefetch(ctx context.Context, pipe redis.Pipeliner, id string) func(context.Context) context.Context {
	if id == "" {
		return func(ctx context.Context) context.Context { return ctx }
	}
	cmd := pipe.GetEx(ctx, store.MCPSession(id), s.idle)
	return func(ctx context.Context) context.Context {
		return context.WithValue(ctx, prefetchedKey{}, prefetched{id: id, cmd: cmd})
	}
}

// Terminate is mcp-go's end of a session outside a DELETE (its shutdown sweep, which
// knows no caller): sessions outlive a replica, so nothing is deleted. A client's DELETE
// is served by (*Server).endSession before mcp-go sees it.
func (m *userSessions) Terminate(string) (bool, error) { return false, nil }

// endSession serves DELETE /mcp: it ends the caller's session named by Mcp-Session-Id, and
// answers 404 for a session that is unknown or another user's, as for any other request
// that names it. A request without the header is left to mcp-go (which answers 400), as
// is one of a revision without sessions.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get(server.HeaderKeySessionID)
	p, ok := auth.PrincipalFrom(r.Context())
	if id == "" || !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
	defer cancel()
	deleted, err := endSessionScript.Run(ctx, s.o.Redis, []string{store.MCPSession(id)}, p.UserID).Int()
	switch {
	case err != nil:
		s.refuse(w, err)
	case deleted == 0:
		http.Error(w, "Invalid session ID", http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusOK)
	}
	return true
}

// endSessionScript deletes KEYS[1] when it belongs to ARGV[1]: 1 when deleted, 0 otherwise.
var endSessionScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)
