package dashboard

import (
	"strconv"

	"github.com/sigops/sigops/runtime/errs"
)

// codeWords says what each of the spec's error codes means to the person who clicked: what
// happened and what to do. The message of the error adds the particulars.
var codeWords = map[errs.Code]string{
	errs.InvalidJSON:          "The request could not be read.",
	errs.InvalidAction:        "That action is not possible here.",
	errs.MissingSymbol:        "Choose a symbol: this bot trades any pair, so the order must name one.",
	errs.InvalidSymbol:        "That symbol is not traded on this bot's venue.",
	errs.InvalidWebhook:       "The webhook URL is not valid (it may have been regenerated).",
	errs.WebhookDisabled:      "The bot's webhook is turned off.",
	errs.BotPaused:            "The bot is paused: resume it to open positions (closing still works).",
	errs.BotDisabled:          "The bot is disabled: see its status for the reason.",
	errs.BotDeleted:           "The bot has been deleted.",
	errs.ExchangeDisconnected: "The exchange connection is not usable: check its API key on the Exchange connections page.",
	errs.RateLimited:          "Too many requests: wait a moment and try again.",
	errs.ExchangeError:        "The exchange refused or failed the order.",
	errs.InsufficientBalance:  "Not enough balance on the account for this order.",
	errs.DCADisabled:          "Safety orders (DCA) are not enabled on this bot.",
	errs.DCAMaxLevels:         "All safety-order levels are already used.",
	errs.DCAInvalidLevel:      "That safety-order level does not exist.",
	errs.DCANoPosition:        "There is no open position to add a safety order to.",
	errs.InvalidAmount:        "The amount is not valid for this market (too small, too precise or not a number).",
	errs.InvalidPrice:         "The price is not valid for this market.",
	errs.Unauthorized:         "You are not signed in, or your session has ended.",
	errs.PositionNotFound:     "There is no open position to close.",
	errs.InternalError:        "Something failed on our side; nothing was changed. Try again.",
	errs.SignalExpired:        "The signal waited too long and was not executed.",
	errs.InvalidParameter:     "A value in the form is not valid.",
	errs.NotFound:             "Not found: it does not exist or is not yours.",
	errs.TierNotAllowed:       "Your subscription tier does not include this.",
	errs.ManagedByGitOps:      "This bot is managed by your platform team's GitOps repository: change it there (pause and resume work here).",
	errs.InsufficientScope:    "The token does not allow this.",
}

// ErrorInWords is a refusal as the dashboard shows it: the code's meaning, the particulars,
// and the code itself (with its number where the spec gives one) for support.
func ErrorInWords(e *errs.Error) string {
	words, ok := codeWords[e.Code]
	if !ok {
		words = "The request was refused."
	}
	code := string(e.Code)
	if n := e.Code.Numeric(); n != 0 {
		code += " " + strconv.Itoa(n)
	}
	if e.Message != "" {
		return words + " " + e.Message + " (" + code + ")"
	}
	return words + " (" + code + ")"
}
