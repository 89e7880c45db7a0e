package dashboard

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/sigops/sigops/runtime/audit"
)

// dashboardClient is the client name of every dashboard entry in the audit journal, so the
// journal's readers tell the dashboard's actions from an MCP client's at a glance.
const dashboardClient = "dashboard"

// recordAction journals one state-changing dashboard action of the viewer: tool names the
// action (pause_bot, change_password, ...), args are its arguments (marshalled to JSON; the
// journal redacts secrets and caps the size) and err its outcome. A journal that cannot be
// written is logged and the action's answer stands: the change has happened, and failing
// the request would make the user repeat it.
func (d *Dashboard) recordAction(r *http.Request, tool string, args any, err error) {
	raw, merr := json.Marshal(args)
	if merr != nil || args == nil {
		raw = json.RawMessage("{}")
	}
	e := audit.Entry{UserID: viewerOf(r).User.ID, ClientName: dashboardClient, Channel: audit.ChannelDashboard,
		Tool: tool, Arguments: raw, Outcome: audit.OutcomeOf(err)}
	if rerr := d.o.APIs.Audit.Record(context.WithoutCancel(r.Context()), e); rerr != nil {
		d.log().Error("dashboard: audit record failed", "tool", tool, "user", e.UserID, "error", rerr)
	}
}
