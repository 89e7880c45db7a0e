package registry

import (
	"strings"

	"github.com/sigops/sigops/runtime/errs"
)

// ExchangeConnectionReasonPrefix starts every DisabledReason the controller writes when a
// bot's exchange connection is the cause (ExchangeConnectionNotFound,
// ExchangeConnectionNotReady): the user must fix the connection, not the bot.
const ExchangeConnectionReasonPrefix = "ExchangeConnection"

// DisabledError is how a disabled bot refuses a signal or an order: EXCHANGE_DISCONNECTED
// when its exchange connection is why it is disabled, BOT_DISABLED for any other reason
// (a missing paper account, an owner mismatch, the owner's tier, ...). It is the one Go
// rule for runtime/trading and the executor; the intake's Lua script applies the same
// prefix test, and runtime/intake's tests hold the two in agreement.
func (b Bot) DisabledError() *errs.Error {
	if strings.HasPrefix(b.DisabledReason, ExchangeConnectionReasonPrefix) {
		return errs.New(errs.ExchangeDisconnected, "exchange not connected")
	}
	return errs.New(errs.BotDisabled, "bot disabled")
}
