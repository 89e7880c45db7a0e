package dashboard

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// The Bot detail page's trade history and its CSV export, both read through
// runtime/history: the hot window and the archive, so that the page and the file show every
// trade the bot ever realised, as MCP's list_trades does.

const (
	// tradePageSize is how many trades the page shows at a time, newest first.
	tradePageSize = 20
	// tradesAfter is the query parameter of an older page: the cursor of the last trade
	// shown.
	tradesAfter = "tradesAfter"
	// csvBatch is how many trades the export reads at a time.
	csvBatch = 1000
)

// tradesPanel is one page of the bot's trades.
type tradesPanel struct {
	Rows []position.Trade
	// Newest and Older link the first page and the next older one ("" when none).
	Newest, Older string
	// CSV downloads every trade.
	CSV   string
	Error string
	// Partial: the archive did not answer; only recent trades are shown.
	Partial bool
}

func (d *Dashboard) tradesPanelOf(r *http.Request, bot registry.Bot) tradesPanel {
	p := tradesPanel{CSV: "/dashboard/bots/" + url.PathEscape(bot.ID) + "/trades.csv"}
	q := history.TradeQuery{Newest: true, Limit: tradePageSize}
	if v := r.URL.Query().Get(tradesAfter); v != "" {
		if c, err := history.ParseTradeCursor(v); err == nil {
			q.After = &c
			p.Newest = detailURL(bot.ID, pageQuery(r)) + "#trades"
		}
	}
	page, err := d.o.APIs.Trading.Trades(r.Context(), bot.ID, q)
	if err != nil {
		p.Error = d.inWords(r, err)
		return p
	}
	p.Rows, p.Partial = page.Trades, page.Partial
	if page.Next != nil {
		p.Older = detailURL(bot.ID, pageQuery(r, tradesAfter, page.Next.String())) + "#trades"
	}
	return p
}

// tradeCSVHeader names the export's columns: times in UTC (RFC 3339, milliseconds), every
// amount as the exact decimal the book holds.
var tradeCSVHeader = []string{"closed_at", "opened_at", "trade_id", "position_id", "signal_id", "symbol", "market", "side",
	"size", "entry_price", "exit_price", "leverage", "pnl", "fees", "net_pnl", "closes_position", "reason"}

// handleTradesCSV streams every trade of the viewer's bot, oldest first, as CSV.
func (d *Dashboard) handleTradesCSV(w http.ResponseWriter, r *http.Request) {
	bot, err := d.detailBot(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	q := history.TradeQuery{Limit: csvBatch}
	page, err := d.o.APIs.Trading.Trades(r.Context(), bot.ID, q)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if page.Partial {
		// A file is kept and trusted: never hand out one with the archive's part missing.
		http.Error(w, "The trade archive is not reachable right now; try the export again in a minute.", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+csvName(bot.Name)+`-trades.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(tradeCSVHeader)
	for {
		for _, t := range page.Trades {
			_ = cw.Write(tradeCSVRow(t))
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
		if page, err = d.o.APIs.Trading.Trades(r.Context(), bot.ID, q); err != nil || page.Partial {
			// The status is sent: end the file with a line that says it is cut short.
			cw.Flush()
			_, _ = w.Write([]byte("# export interrupted: the trade archive stopped answering; download again\n"))
			return
		}
	}
	cw.Flush()
}

func tradeCSVRow(t position.Trade) []string {
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	return []string{at(t.ClosedAt), at(t.OpenedAt), cell(t.ID), cell(t.PositionID), cell(t.SignalID), cell(t.Symbol),
		string(t.Kind), string(t.Side), t.Size.String(), t.EntryPrice.String(), t.ExitPrice.String(), strconv.Itoa(t.Leverage),
		t.Pnl.String(), t.Fees.String(), t.NetPnl.String(), strconv.FormatBool(t.Closed), cell(t.Reason)}
}

// cell keeps a text field from being read as a formula by a spreadsheet (CSV injection).
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// csvName is a bot name made safe for a file name.
func csvName(name string) string {
	if n := strings.Trim(unsafeName.ReplaceAllString(name, "-"), "-."); n != "" {
		return n
	}
	return "bot"
}
