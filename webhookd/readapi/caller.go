package readapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// Caller is the user a read request speaks for.
type Caller struct {
	UserID string
	// Email is the account's e-mail in canonical form (runtime/emails): bots, paper
	// accounts and exchange connections name their owner by it.
	Email string
}

type callerKey struct{}

// CallerFrom is the caller requireCaller identified.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// errNoCredentials: the request carries neither a bearer token nor a session cookie.
var errNoCredentials = errors.New("readapi: no credentials")

// requireCaller admits a request with a valid bearer JWT, an OAuth access token whose scope
// includes mcp:read and whose audience is the API, or a live dashboard session cookie. A
// bearer token, when present, decides alone: a bad token is refused even with a good cookie,
// so a client never learns that its token failed by being served anyway. Refusals: 401 with
// the RFC 6750 challenge (no credentials, or a token or session that is invalid, expired,
// revoked or from before a password change), 403 insufficient_scope, 500 INTERNAL_ERROR
// when Redis cannot be read (never admitted on a guess).
func (a *API) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.identify(r)
		if err != nil {
			a.refuseCaller(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// optionalCaller identifies the caller of a route that serves anonymous callers too (public
// data, with more for a caller): no credentials is (zero, false, nil); credentials that fail
// are refused exactly as requireCaller refuses them, so a client never gets the anonymous
// answer in place of the one its bad token asked for. On error the refusal is written.
func (a *API) optionalCaller(w http.ResponseWriter, r *http.Request) (Caller, bool, error) {
	c, err := a.identify(r)
	switch {
	case err == nil:
		return c, true, nil
	case errors.Is(err, errNoCredentials):
		return Caller{}, false, nil
	}
	a.refuseCaller(w, err)
	return Caller{}, false, err
}

// refuseCaller answers identify's error.
func (a *API) refuseCaller(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errInsufficientScope):
		auth.WriteInsufficientScope(w, auth.ScopeRead, a.o.ResourceMetadata)
	case errors.Is(err, auth.ErrUnavailable):
		httpapi.WriteError(w, errs.New(errs.InternalError, "service unavailable"), "", a.o.Now())
	default:
		auth.WriteUnauthorized(w, !errors.Is(err, errNoCredentials), a.o.ResourceMetadata, a.o.Now().UnixMilli())
	}
}

var errInsufficientScope = errors.New("readapi: insufficient scope")

// identify finds the caller of r.
func (a *API) identify(r *http.Request) (Caller, error) {
	ctx := r.Context()
	if raw, ok := auth.BearerToken(r); ok {
		if a.o.Verifier == nil { // no signing key configured: no token can be checked
			return Caller{}, auth.ErrInvalidToken
		}
		p, err := a.o.Verifier.Verify(ctx, raw)
		if err != nil {
			return Caller{}, err
		}
		if !p.Allows(auth.ScopeRead) {
			return Caller{}, errInsufficientScope
		}
		return a.callerOf(ctx, p.UserID)
	}
	ck, err := r.Cookie(auth.SessionCookie)
	if err != nil || ck.Value == "" || a.o.Sessions == nil {
		return Caller{}, errNoCredentials
	}
	s, err := a.o.Sessions.Lookup(ctx, ck.Value)
	if err != nil {
		if errors.Is(err, auth.ErrNoSession) {
			return Caller{}, auth.ErrInvalidToken
		}
		return Caller{}, auth.ErrUnavailable
	}
	return a.callerOf(ctx, s.UserID)
}

// callerOf completes a verified user ID with the account's e-mail. An account deleted under
// a live token answers like an invalid token.
func (a *API) callerOf(ctx context.Context, userID string) (Caller, error) {
	u, err := a.o.Users.Get(ctx, userID)
	if errors.Is(err, auth.ErrNotFound) {
		return Caller{}, auth.ErrInvalidToken
	}
	if err != nil {
		return Caller{}, auth.ErrUnavailable
	}
	return Caller{UserID: u.ID, Email: emails.Canonical(u.Email)}, nil
}
