package authd

import (
	"errors"
	"net/http"

	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/runtime/auth"
)

// changePassword is the dashboard's password change (dashboard.Options.ChangePassword): the
// current password is checked behind the same brute-force gate as a login of u's email from
// the request's address, so the settings form is no way around the login limits; then
// SetPassword bumps the generation, which ends every session, bearer JWT and OAuth grant of
// u.
func (s *Server) changePassword(r *http.Request, u auth.User, current, next string) error {
	checked, err := s.attemptLogin(r.Context(), r, u.Email, current)
	if errors.Is(err, auth.ErrInvalidCredentials) {
		s.log().Info("password change refused", "channel", "dashboard", "user", u.ID, "client", s.clientKey(r))
		return dashboard.ErrWrongPassword
	}
	if err != nil {
		return err
	}
	if checked.ID != u.ID {
		// The session's user and the email's account differ only if the email changed hands
		// between the session lookup and the check: refuse rather than change another
		// account's password.
		return dashboard.ErrWrongPassword
	}
	return s.users.SetPassword(r.Context(), u.ID, next)
}
