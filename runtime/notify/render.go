package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// The text of a message is plain (no markup), built from the event's fields alone, the
// same for Telegram, Slack and Discord; Slack and Discord get it in their own JSON.

// Text is m as a person reads it.
func Text(m Message) string {
	if len(m.Events) == 0 {
		return ""
	}
	if len(m.Events) == 1 {
		return line(m.Events[0])
	}
	return gathered(m.Events)
}

// pauseReasons say a pause's reason (runtime/registry's, and an app's) in words.
var pauseReasons = map[string]string{
	"Manual":    "paused by you",
	"Errors":    "too many execution errors in a row",
	"Risk":      "its daily loss or consecutive-loss limit was reached",
	"Downgrade": "your plan no longer includes live trading",
	"Agent":     "paused by a connected app",
}

// refusals say a refused order's code in words, the code kept for a search.
var refusals = map[string]string{
	"EXCHANGE_ERROR":       "EXCHANGE_ERROR: the exchange refused it",
	"INSUFFICIENT_BALANCE": "INSUFFICIENT_BALANCE: not enough balance",
	"INVALID_AMOUNT":       "INVALID_AMOUNT: the amount is outside the exchange's or the bot's limits",
}

// connectionReasons say why a connection stopped working.
var connectionReasons = map[string]string{
	"KeyRevoked":        "the exchange no longer accepts its API key",
	"MissingPermission": "its API key lacks a permission trading needs",
	"WithdrawEnabled":   "its API key can withdraw funds, which sigops refuses",
}

func words(m map[string]string, code string) string {
	if w, ok := m[code]; ok {
		return w
	}
	if code == "" {
		return "no reason given"
	}
	return code
}

// line is one event's sentence.
func line(e Event) string {
	bot := "Bot " + e.Bot
	switch e.Kind {
	case Fill:
		verb := "bought"
		if e.Side == "sell" {
			verb = "sold"
		}
		s := fmt.Sprintf("%s %s %s %s at %s", bot, verb, e.Amount.String(), e.Symbol, e.Price.String())
		if e.PnL != nil {
			s += ", realised PnL " + signed(e.PnL.Decimal)
		}
		return s
	case OrderRefused:
		if e.Symbol == "" {
			return fmt.Sprintf("%s: an order was refused (%s)", bot, words(refusals, e.Reason))
		}
		return fmt.Sprintf("%s: a %s order for %s was refused (%s)", bot, e.Side, e.Symbol, words(refusals, e.Reason))
	case SignalDeadLettered:
		return fmt.Sprintf("%s: a signal was given up after %d attempts (%s)", bot, e.Attempts, words(nil, e.Reason))
	case SignalExpired:
		return fmt.Sprintf("%s: a signal arrived too late and was not executed", bot)
	case BotPaused:
		return fmt.Sprintf("%s paused: %s", bot, words(pauseReasons, e.Reason))
	case BotResumed:
		return fmt.Sprintf("%s resumed", bot)
	case ConnectionInvalid:
		return fmt.Sprintf("Connection %s stopped working: %s", e.Connection, words(connectionReasons, e.Reason))
	case ApprovalRequested:
		s := fmt.Sprintf("Approval needed: %s wants to %s %s %s on %s", e.App, e.Side, e.Amount.String(), e.Symbol, e.Bot)
		if !e.Expires.IsZero() {
			s += " (expires " + e.Expires.UTC().Format("15:04 UTC") + ")"
		}
		return s
	case ApprovalDecided:
		return fmt.Sprintf("%s's order on %s: %s", e.App, e.Bot, words(nil, e.Reason))
	case WebhookDisabled:
		return fmt.Sprintf("Webhook destination %s was turned off after a day of failed deliveries; turn it on again in the dashboard's Notifications settings", e.Destination)
	case DailySummary:
		return summary(e)
	}
	return fmt.Sprintf("%s: %s", bot, e.Kind)
}

// gathered is a burst's sentence: its count, and for fills their realised PnL in all.
func gathered(es []Event) string {
	e := es[0]
	if e.Kind != Fill {
		return fmt.Sprintf("%s (and %d more like it in the last minute)", line(es[len(es)-1]), len(es)-1)
	}
	total, exits := decimal.Zero, 0
	for _, x := range es {
		if x.PnL != nil {
			total, exits = total.Add(x.PnL.Decimal), exits+1
		}
	}
	s := fmt.Sprintf("Bot %s: %d fills in the last minute", e.Bot, len(es))
	if exits > 0 {
		s += fmt.Sprintf(", realised PnL %s over %d exits", signed(total), exits)
	}
	return s + "; last: " + strings.TrimPrefix(line(es[len(es)-1]), "Bot "+e.Bot+" ")
}

// signed is d with its sign, as PnL is read.
func signed(d decimal.Decimal) string {
	if d.IsPositive() {
		return "+" + d.String()
	}
	return d.String()
}

// slackEscape escapes what Slack's text reads as markup.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Slack is m as a Slack incoming webhook's body.
func Slack(m Message) ([]byte, error) {
	return json.Marshal(map[string]string{"text": slackEscape.Replace(Text(m))})
}

// discordLimit is the longest content Discord takes, in characters.
const discordLimit = 2000

// Discord is m as a Discord webhook's body; mentions are turned off, so no text of ours can
// ping anyone.
func Discord(m Message) ([]byte, error) {
	text := Text(m)
	if r := []rune(text); len(r) > discordLimit {
		text = string(r[:discordLimit-1]) + "…"
	}
	return json.Marshal(map[string]any{"content": text, "allowed_mentions": map[string]any{"parse": []string{}}})
}

// JSON is m in sigops's own format: the events as they are, with the message's text.
func JSON(m Message) ([]byte, error) {
	return json.Marshal(struct {
		Text   string  `json:"text"`
		Events []Event `json:"events"`
	}{Text(m), m.Events})
}

// summary is a DailySummary's text: a line per bot, then the total.
func summary(e Event) string {
	if len(e.Summary) == 0 {
		return "Your day (" + e.Day + ", UTC): no bots."
	}
	lines := []string{"Your day (" + e.Day + ", UTC), realised PnL:"}
	total := decimal.Zero
	for _, b := range e.Summary {
		line := fmt.Sprintf("• %s (%s): %s", b.Bot, b.State, signed(b.PnL.Decimal))
		if len(b.Open) > 0 {
			line += "; open: " + strings.Join(b.Open, ", ")
		}
		lines = append(lines, line)
		total = total.Add(b.PnL.Decimal)
	}
	lines = append(lines, "Total: "+signed(total))
	for _, b := range e.Balances {
		lines = append(lines, fmt.Sprintf("Paper account %s: %s %s free", b.Account, b.Amount.String(), b.Currency))
	}
	return strings.Join(lines, "\n")
}
