package dashboard

import (
	"net/http"
	"net/url"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// signalPageSize is how many signals one page of the log shows.
const signalPageSize = 50

// signalPage is one page of the bot's signal log, newest first.
type signalPage struct {
	Rows []signalRow
	// Src is the fragment's own URL (live refreshes re-read the same page).
	Src string
	// Older is the link to the next page ("" on the last); Newest the link back to the
	// first ("" on it).
	Older  string
	Newest string
	// Note says the page asked for has moved on (its first signal left the index).
	Note  string
	Error string
}

// signalRow is a signal with its result. Queued and started times are not recorded: the
// index holds when the signal was received, the result when it was decided.
type signalRow struct {
	SignalID string
	Source   string
	Action   string
	Received time.Time
	// Found is false when the result has expired (kept 24 hours, like the index).
	Found   bool
	Success bool
	Message string
	// Error is the failure in words with its code; Code the code alone.
	Error     string
	Code      string
	Order     string
	Decided   time.Time
	LatencyMs int64
}

// signalsAfter is the query parameter of the signal log's page: the ID of the last signal
// of the previous page.
const signalsAfter = "signalsAfter"

func (d *Dashboard) signalPageOf(r *http.Request, bot registry.Bot) signalPage {
	ctx := r.Context()
	after := r.URL.Query().Get(signalsAfter)
	p := signalPage{Src: "/dashboard/bots/" + url.PathEscape(bot.ID) + "/signals"}
	if after != "" {
		p.Src += "?" + url.Values{signalsAfter: {after}}.Encode()
	}
	entries, err := d.o.APIs.Trading.RecentSignals(ctx, bot.ID)
	if err != nil {
		p.Error = d.inWords(r, err)
		return p
	}
	start := 0
	if after != "" {
		start = -1
		for i, e := range entries {
			if e.SignalID == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			start = 0
			p.Note = "The signals this page continued from are no longer kept: showing the newest."
		}
	}
	if start > 0 || p.Note != "" {
		p.Newest = detailURL(bot.ID, pageQuery(r)) + "#signals"
	}
	end := min(start+signalPageSize, len(entries))
	page := entries[start:end]
	if end < len(entries) && len(page) > 0 {
		p.Older = detailURL(bot.ID, pageQuery(r, signalsAfter, page[len(page)-1].SignalID)) + "#signals"
	}
	ids := make([]string, len(page))
	for i, e := range page {
		ids[i] = e.SignalID
	}
	results, err := d.o.APIs.Trading.Results(ctx, ids)
	if err != nil {
		p.Error = d.inWords(r, err)
		return p
	}
	for i, e := range page {
		row := signalRow{SignalID: e.SignalID, Source: e.Source, Action: e.Action, Received: time.UnixMilli(e.ReceivedAt)}
		if st := results[i]; st.Found && st.Result.BotID == bot.ID {
			res := st.Result
			row.Found, row.Success, row.Message = true, res.Success, res.Message
			row.Decided, row.LatencyMs = time.UnixMilli(res.Timestamp), res.Timestamp-e.ReceivedAt
			if !res.Success {
				row.Code = string(res.Code)
				row.Error = ErrorInWords(&errs.Error{Code: res.Code, Message: res.Error})
			}
			if o := res.Order; o != nil {
				row.Order = o.Side + " " + o.FilledAmount.String() + " " + o.Symbol + " @ " + o.AvgPrice.String() + " (" + o.Status + ")"
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}
