package authd

import (
	"net/http"
	"time"

	"github.com/sigops/sigops/runtime/auth"
)

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func (s *Server) settingsData(sc sessionCtx) pageData {
	return pageData{Title: "Settings", User: &sc.user, CSRF: sc.sess.CSRF, Wallet: sc.user.StrategyLabBalanceUsd.StringFixed(2)}
}

// handleSettings is the account settings page.
func (s *Server) handleSettings(w http.ResponseWriter, _ *http.Request, sc sessionCtx) {
	s.render(w, http.StatusOK, "settings", s.settingsData(sc), "")
}

// handleIssueToken issues a bearer JWT from the settings page (CSRF-checked) and shows it once.
func (s *Server) handleIssueToken(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	if !parseForm(w, r) || !s.checkCSRF(r, sc.sess.CSRF) {
		s.errorPage(w, http.StatusForbidden, "Request refused", "The form was not sent from this site. Reload the page and try again.")
		return
	}
	tok, err := s.issuer.IssueAPIToken(r.Context(), sc.user)
	if err != nil {
		s.log().Error("dashboard: issue token", "error", err)
		s.unavailablePage(w)
		return
	}
	s.log().Info("api token issued", "channel", "dashboard", "user", sc.user.ID)
	d := s.settingsData(sc)
	d.Token, d.TokenExpires = tok.Token, fmtTime(tok.ExpiresAt)
	s.render(w, http.StatusOK, "settings", d, "")
}

type appRow struct {
	ID, ClientName, ClientID, Scope      string
	Issued, Expires, LastUsed, RevokedAt string
	Expired, Active                      bool
}

// handleConnectedApps lists the user's OAuth authorizations, revoked ones included.
func (s *Server) handleConnectedApps(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	list, err := s.oauth.ListAuthorizations(r.Context(), sc.user.ID)
	if err != nil {
		s.log().Error("connected apps", "error", err)
		s.unavailablePage(w)
		return
	}
	now := s.o.Now()
	rows := make([]appRow, 0, len(list))
	for _, a := range list {
		row := appRow{ID: a.ID, ClientName: a.ClientName, ClientID: a.ClientID, Scope: a.Scope, Issued: fmtTime(a.CreatedAt),
			Expires: fmtTime(a.ExpiresAt), LastUsed: fmtTime(a.LastUsed), Expired: !now.Before(a.ExpiresAt), Active: a.Active(now)}
		if !a.RevokedAt.IsZero() {
			row.RevokedAt = fmtTime(a.RevokedAt)
		}
		rows = append(rows, row)
	}
	s.render(w, http.StatusOK, "apps", pageData{Title: "Connected apps", User: &sc.user, CSRF: sc.sess.CSRF, Apps: rows}, "")
}

// handleRevokeApp revokes one authorization (CSRF-checked): its access tokens and refresh
// chain die at once, its record stays listed with revokedAt.
func (s *Server) handleRevokeApp(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	if !parseForm(w, r) || !s.checkCSRF(r, sc.sess.CSRF) {
		s.errorPage(w, http.StatusForbidden, "Request refused", "The form was not sent from this site. Reload the page and try again.")
		return
	}
	id := r.PostFormValue("authorization")
	if err := s.oauth.RevokeAuthorization(r.Context(), sc.user.ID, id); err != nil {
		if err == auth.ErrNotFound {
			s.errorPage(w, http.StatusNotFound, "Not found", "That connected app does not exist.")
			return
		}
		s.log().Error("revoke app", "error", err)
		s.unavailablePage(w)
		return
	}
	s.verifier.Purge()
	s.log().Info("connected app revoked", "user", sc.user.ID, "authorization", id)
	http.Redirect(w, r, "/dashboard/settings/connected-apps", http.StatusSeeOther)
}
