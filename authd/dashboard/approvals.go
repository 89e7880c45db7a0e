package dashboard

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/approval"
)

// approvalRoutes are the Approvals page (the live orders of connected apps that wait for
// the viewer), its live fragments (the list, the header's badge) and the decisions.
func (d *Dashboard) approvalRoutes(r chi.Router) {
	r.Get("/approvals", d.handleApprovals)
	r.Get("/approvals/list", d.handleApprovalsList)
	r.Get("/approvals/badge", d.handleApprovalsBadge)
	r.Post("/approvals/{signalID}/approve", d.handleDecide(true))
	r.Post("/approvals/{signalID}/reject", d.handleDecide(false))
}

// approvalsDone are the flashes a decision's redirect may ask for (?done=).
var approvalsDone = map[string]string{
	"approved": "Approved: the order is queued and placed within moments.",
	"rejected": "Rejected: the order will never be placed.",
}

// approvalsPage reads the viewer's waiting approvals into a page.
func (d *Dashboard) approvalsPage(r *http.Request) (Page, error) {
	v := viewerOf(r)
	list, err := d.approvals.Pending(r.Context(), v.User.ID)
	if err != nil {
		return Page{}, err
	}
	return Page{Title: "Approvals", Nav: "approvals", Viewer: v, Flash: approvalsDone[r.URL.Query().Get("done")], Data: list}, nil
}

// handleApprovals is the Approvals page: every live order a connected app's policy holds
// for the viewer, with what it would place (sized and priced when the app asked) and the
// rule that asked, and one-click Approve and Reject.
func (d *Dashboard) handleApprovals(w http.ResponseWriter, r *http.Request) {
	p, err := d.approvalsPage(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "approvals", p)
}

// handleApprovalsList is the list alone, re-read live when an approval is asked for or
// decided (on any replica), and every 10 s while one waits: an expiry publishes no event.
func (d *Dashboard) handleApprovalsList(w http.ResponseWriter, r *http.Request) {
	p, err := d.approvalsPage(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "approvals", "approvals-list", p)
}

// handleApprovalsBadge is the header's count of waiting approvals, re-read live.
func (d *Dashboard) handleApprovalsBadge(w http.ResponseWriter, r *http.Request) {
	p := Page{Viewer: viewerOf(r)}
	d.withPending(r, &p)
	d.fragment(w, http.StatusOK, "approvals", "approvals-badge", p)
}

// withPending sets p's count of the viewer's waiting approvals (the header's badge): one
// ZCOUNT. A count that cannot be read leaves the badge empty rather than failing the page.
func (d *Dashboard) withPending(r *http.Request, p *Page) {
	if p.Viewer.User.ID == "" || d.approvals == nil {
		return
	}
	n, err := d.approvals.PendingCount(r.Context(), p.Viewer.User.ID)
	if err != nil {
		d.log().Warn("dashboard: reading the approvals waiting", "error", err)
		return
	}
	p.PendingApprovals = n
}

// handleDecide approves (the app's policy admits the order again, it is counted and
// queued under its signal ID) or rejects one of the viewer's waiting orders. Journaled.
func (d *Dashboard) handleDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user := viewerOf(r).User.ID
		id := chi.URLParam(r, "signalID")
		var (
			a   approval.Approval
			err error
		)
		tool, done := "reject_order", "rejected"
		if approve {
			tool, done = "approve_order", "approved"
			a, err = d.approvals.Approve(r.Context(), user, id)
		} else {
			a, err = d.approvals.Reject(r.Context(), user, id)
		}
		d.recordAction(r, tool, map[string]any{"signalId": id, "app": a.ClientName, "bot": a.BotName, "notional": a.Notional}, err)
		if err != nil {
			d.failPage(w, r, err)
			return
		}
		redirect(w, r, "/dashboard/approvals?done="+done)
	}
}
