package dashboard

import (
	"cmp"
	"html/template"
	"strings"

	"github.com/sigops/sigops/runtime/registry"
)

// The overview's two long tables (up to OverviewPositions positions and every bot) are
// written here rather than by html/template: its escaper is a reflective call for each
// {{...}}, and those tables were a quarter of a render. Each row is the markup the row
// template wrote (TestOverviewRowsAreTheTemplates holds them byte for byte equal), and
// every value in it is escaped here, once, as html/template escapes it in that place:
// escapeText in text and quoted attributes, escapeURL in a URL's path. Nothing a user
// chose (a bot's name, a symbol, an account's name) is written unescaped.

// positionRows is the <tbody> content of the open positions table.
func positionRows(rows []overviewPosition) template.HTML {
	b := &strings.Builder{}
	b.Grow(len(rows) * 400)
	for _, p := range rows {
		b.WriteString("<tr>\n<td><a href=\"/dashboard/bots/")
		escapeURL(b, p.BotID)
		b.WriteString("\">")
		escapeText(b, p.BotName)
		rowCell(b, "</a></td>\n<td>", p.Symbol)
		rowCell(b, "</td>\n<td>", p.Side)
		rowCell(b, "</td>\n<td class=\"num\">", p.Size)
		rowCell(b, "</td>\n<td class=\"num\">", p.Entry)
		rowCell(b, "</td>\n<td class=\"num\">", p.Mark)
		rowCell(b, "</td>\n<td class=\"num ", p.PnLClass)
		rowCell(b, "\" title=\"", p.PnLExact)
		rowCell(b, "\">", p.PnL)
		rowCell(b, "</td>\n<td class=\"num\">", p.StopLoss)
		rowCell(b, "</td>\n<td class=\"num\">", p.TakeProfit)
		rowCell(b, "</td>\n<td>", p.Account)
		b.WriteString("</td>\n</tr>")
	}
	return template.HTML(b.String()) // every value in it is escaped above
}

// botRows is the <tbody> content of the bots table: each bot with its pause or resume form
// (csrf: the viewer's form token).
func botRows(bots []registry.Bot, csrf string) template.HTML {
	b := &strings.Builder{}
	b.Grow(len(bots) * 800)
	for _, bot := range bots {
		b.WriteString("<tr>\n<td><a href=\"/dashboard/bots/")
		escapeURL(b, bot.ID)
		rowCell(b, "\">", bot.Name)
		rowCell(b, "</a> <span class=\"muted\">", bot.Namespace)
		rowCell(b, "</span></td>\n<td>", cmp.Or(bot.Symbol, "any pair"))
		rowCell(b, " <span class=\"muted\">", bot.Market)
		if bot.Account.Kind == registry.AccountExchange {
			b.WriteString("</span> <span class=\"badge live\">live</span></td>\n")
		} else {
			b.WriteString("</span> <span class=\"badge\">paper</span></td>\n")
		}
		rowCell(b, "<td><span class=\"badge ", bot.Availability)
		rowCell(b, "\">", bot.Availability)
		b.WriteString("</span>")
		switch bot.Availability {
		case "paused":
			rowCell(b, " <span class=\"muted\">", bot.PausedReason)
			b.WriteString("</span>")
		case "disabled":
			rowCell(b, " <span class=\"muted\">", cmp.Or(bot.DisabledReason, string(bot.DisabledCode)))
			b.WriteString("</span>")
		}
		botRowForm(b, bot, csrf)
		b.WriteString("</td>\n</tr>")
	}
	return template.HTML(b.String()) // every value in it is escaped above
}

// botRowForm is the bot's resume form while paused, its pause form otherwise.
func botRowForm(b *strings.Builder, bot registry.Bot, csrf string) {
	action, button, class := "pause", "Pause", ` class="ghost"`
	if bot.Availability == "paused" {
		action, button, class = "resume", "Resume", ""
	}
	b.WriteString("</td>\n<td><form method=\"post\" action=\"/dashboard/bots/")
	escapeURL(b, bot.ID)
	b.WriteString("/")
	b.WriteString(action)
	b.WriteString("\" class=\"inline\"><input type=\"hidden\" name=\"csrf_token\" value=\"")
	escapeText(b, csrf)
	b.WriteString("\"><input type=\"hidden\" name=\"next\" value=\"/dashboard\"><button type=\"submit\"")
	b.WriteString(class)
	b.WriteString(" aria-label=\"")
	b.WriteString(button)
	b.WriteString(" ")
	escapeText(b, bot.Name)
	b.WriteString("\">")
	b.WriteString(button)
	b.WriteString("</button></form>")
}

// rowCell appends the markup before a value, then the value escaped.
func rowCell(b *strings.Builder, markup, value string) {
	b.WriteString(markup)
	escapeText(b, value)
}

// escapeText appends s as html/template writes a string in text or in a quoted attribute
// value: the bytes < > & ' " + and NUL replaced, every other byte as it is.
func escapeText(b *strings.Builder, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		b.WriteString(s[start:i])
		b.WriteString(repl)
		start = i + 1
	}
	b.WriteString(s[start:])
}

// escapeURL appends s as html/template writes a string in a URL attribute after its path
// has begun: normalised (every byte but letters, digits, RFC 3986's reserved and
// unreserved characters and valid percent escapes is percent-encoded), then escaped for
// the attribute.
func escapeURL(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		case c == '-' || c == '.' || c == '_' || c == '~':
			continue
		case c == '!' || c == '#' || c == '$' || c == '*' || c == ',' || c == '/' || c == ':' || c == ';' || c == '=' ||
			c == '?' || c == '@' || c == '[' || c == ']':
			continue
		case c == '&' || c == '+':
			// Kept in the URL, but escaped for the attribute.
			b.WriteString(s[start:i])
			escapeText(b, s[i:i+1])
			start = i + 1
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
		start = i + 1
	}
	b.WriteString(s[start:])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
