package dashboard

import (
	"html/template"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/registry"
)

// The row templates the overview rendered its tables with before positionRows and
// botRows wrote them; kept here as the reference of the markup and of its escaping.
const (
	positionRowTemplate = `{{range .}}<tr>
<td><a href="/dashboard/bots/{{.BotID}}">{{.BotName}}</a></td>
<td>{{.Symbol}}</td>
<td>{{.Side}}</td>
<td class="num">{{.Size}}</td>
<td class="num">{{.Entry}}</td>
<td class="num">{{.Mark}}</td>
<td class="num {{.PnLClass}}" title="{{.PnLExact}}">{{.PnL}}</td>
<td class="num">{{.StopLoss}}</td>
<td class="num">{{.TakeProfit}}</td>
<td>{{.Account}}</td>
</tr>{{end}}`
	botRowTemplate = `{{define "csrf"}}<input type="hidden" name="csrf_token" value="{{.Viewer.CSRF}}">{{end}}{{range .Data.Bots}}<tr>
<td><a href="/dashboard/bots/{{.ID}}">{{.Name}}</a> <span class="muted">{{.Namespace}}</span></td>
<td>{{or .Symbol "any pair"}} <span class="muted">{{.Market}}</span> <span class="badge{{if eq .Account.Kind "exchange"}} live{{end}}">{{if eq .Account.Kind "exchange"}}live{{else}}paper{{end}}</span></td>
<td><span class="badge {{.Availability}}">{{.Availability}}</span>{{if eq .Availability "paused"}} <span class="muted">{{.PausedReason}}</span>{{else if eq .Availability "disabled"}} <span class="muted">{{or .DisabledReason .DisabledCode}}</span>{{end}}</td>
<td>{{if eq .Availability "paused"}}<form method="post" action="/dashboard/bots/{{.ID}}/resume" class="inline">{{template "csrf" $}}<input type="hidden" name="next" value="/dashboard"><button type="submit" aria-label="Resume {{.Name}}">Resume</button></form>{{else}}<form method="post" action="/dashboard/bots/{{.ID}}/pause" class="inline">{{template "csrf" $}}<input type="hidden" name="next" value="/dashboard"><button type="submit" class="ghost" aria-label="Pause {{.Name}}">Pause</button></form>{{end}}</td>
</tr>{{end}}`
)

// hostile are values a user may choose (a bot's name, a symbol, an account's name) or
// that carry every byte the escapers treat specially.
var hostile = []string{"", "bot 001", "BTC/USDT", `<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`,
	`'single' & "double"`, "+1000.00 (+3.33 %)", "nul\x00byte", "bad\xff\xfeutf8", "é 🚀 日本", "%41%zz%4", "a b/c?d#e&f+g'h\"i<j>k",
	"\u2028\u2029", "javascript:alert(1)", "!$*,:;=@[]~-._", "\t\n\r", "&amp;&#43;"}

func pick(i, k int) string { return hostile[(i*7+k*3)%len(hostile)] }

func TestOverviewRowsAreTheTemplates(t *testing.T) {
	var positions []overviewPosition
	var bots []registry.Bot
	for i := range 3 * len(hostile) {
		positions = append(positions, overviewPosition{BotID: pick(i, 0), BotName: pick(i, 1), Account: pick(i, 2), Symbol: pick(i, 3),
			Side: pick(i, 4), Size: pick(i, 5), Entry: pick(i, 6), Mark: pick(i, 7), StopLoss: pick(i, 8), TakeProfit: pick(i, 9),
			PnL: pick(i, 10), PnLExact: pick(i, 11), PnLClass: pick(i, 12)})
		b := registry.Bot{ID: pick(i, 0), Name: pick(i, 1), Namespace: pick(i, 2), Symbol: pick(i, 3), Market: pick(i, 4),
			Account:      registry.Account{Kind: []string{registry.AccountPaper, registry.AccountExchange, "", pick(i, 5)}[i%4]},
			Availability: []string{"active", "paused", "disabled", pick(i, 6)}[i%4], PausedReason: pick(i, 7),
			DisabledCode: registry.DisabledCode(pick(i, 8))}
		if i%3 != 0 {
			b.DisabledReason = pick(i, 9)
		}
		bots = append(bots, b)
	}
	var want strings.Builder
	if err := template.Must(template.New("").Parse(positionRowTemplate)).Execute(&want, positions); err != nil {
		t.Fatal(err)
	}
	if got := string(positionRows(positions)); got != want.String() {
		t.Fatalf("position rows differ from the template's:\n got %q\nwant %q", got, want.String())
	}
	for _, csrf := range hostile[:5] {
		want.Reset()
		page := Page{Viewer: Viewer{CSRF: csrf}, Data: struct{ Bots []registry.Bot }{bots}}
		if err := template.Must(template.New("").Parse(botRowTemplate)).Execute(&want, page); err != nil {
			t.Fatal(err)
		}
		if got := string(botRows(bots, csrf)); got != want.String() {
			t.Fatalf("bot rows differ from the template's:\n got %q\nwant %q", got, want.String())
		}
	}
}

// The hand-written rows equal the templates they replaced for random text in every field
// too: 3,000 strings drawn from the bytes the escapers treat specially, letters, digits,
// invalid UTF-8 and multi-byte runes (seeded, so a failure replays).
func TestOverviewRowsMatchTheTemplatesOnRandomText(t *testing.T) {
	alphabet := []string{"<", ">", "&", "'", "\"", "+", "%", "%4", "%41", "#", "?", "/", ":", "=", " ", "\x00", "\xff",
		"\xc3", "é", "🚀", "\u2028", "a", "Z", "9", "-", "_", "~", "!", "$", "*", ",", ";", "@", "[", "]", "\t", "\n", "`", "\\"}
	rng := rand.New(rand.NewPCG(31, 7))
	positions := template.Must(template.New("").Parse(positionRowTemplate))
	bots := template.Must(template.New("").Parse(botRowTemplate))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		p := []overviewPosition{{BotID: s, BotName: s, Account: s, Symbol: s, Side: s, Size: s, Entry: s, Mark: s,
			StopLoss: s, TakeProfit: s, PnL: s, PnLExact: s, PnLClass: s}}
		var want strings.Builder
		if err := positions.Execute(&want, p); err != nil {
			t.Fatal(err)
		}
		if got := string(positionRows(p)); got != want.String() {
			t.Fatalf("position row for %q:\n got %q\nwant %q", s, got, want.String())
		}
		var list []registry.Bot
		for _, avail := range []string{"active", "paused", "disabled", s} {
			list = append(list, registry.Bot{ID: s, Name: s, Namespace: s, Symbol: s, Market: s, Availability: avail,
				PausedReason: s, DisabledReason: s, Account: registry.Account{Kind: s}})
		}
		want.Reset()
		if err := bots.Execute(&want, Page{Viewer: Viewer{CSRF: s}, Data: struct{ Bots []registry.Bot }{list}}); err != nil {
			t.Fatal(err)
		}
		if got := string(botRows(list, s)); got != want.String() {
			t.Fatalf("bot rows for %q:\n got %q\nwant %q", s, got, want.String())
		}
	}
}
