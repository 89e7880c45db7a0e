package registry

import "github.com/sigops/sigops/runtime/errs"

// DisabledCode says why a disabled bot is disabled, as a fixed set of values that the
// runtime acts on; the human-readable reason (DisabledReason, the Ready condition's reason)
// is only shown. The controller writes both into the projection.
type DisabledCode string

// The codes. DisabledExchangeDisconnected is the one the user fixes on the exchange
// connection; every other is about the bot, its account or its owner.
const (
	// DisabledExchangeDisconnected: the bot's exchange connection is missing or not Ready
	// (a refused key, an unreachable exchange).
	DisabledExchangeDisconnected DisabledCode = "ExchangeDisconnected"
	// DisabledAccountMissing: the bot's paper account does not exist.
	DisabledAccountMissing DisabledCode = "AccountMissing"
	// DisabledAccountNotReady: the bot's paper account is not Ready.
	DisabledAccountNotReady DisabledCode = "AccountNotReady"
	// DisabledOwnerMismatch: the account belongs to another owner.
	DisabledOwnerMismatch DisabledCode = "OwnerMismatch"
	// DisabledPermissionMissing: the connection's key lacks the trade permission of the
	// bot's market.
	DisabledPermissionMissing DisabledCode = "PermissionMissing"
	// DisabledTierNotAllowed: the owner has no account, or a tier without live trading.
	DisabledTierNotAllowed DisabledCode = "TierNotAllowed"
	// DisabledTierUnavailable: the owner's tier could not be read (live trading fails
	// closed).
	DisabledTierUnavailable DisabledCode = "TierUnavailable"
)

// DisabledCodes are all the codes, for tests that hold every reader to the same answer.
var DisabledCodes = []DisabledCode{
	DisabledExchangeDisconnected, DisabledAccountMissing, DisabledAccountNotReady, DisabledOwnerMismatch,
	DisabledPermissionMissing, DisabledTierNotAllowed, DisabledTierUnavailable,
}

// legacyExchangeReasons are the DisabledReasons that meant an exchange connection problem
// in a projection that carries no DisabledCode (written by a controller that wrote none).
// The controller re-projects every bot when it starts, so such a projection lasts until
// then; runtime/intake's script knows the same two names.
var legacyExchangeReasons = map[string]bool{
	"ExchangeConnectionNotFound": true,
	"ExchangeConnectionNotReady": true,
}

// disabledCode is the bot's DisabledCode; for a projection without one, the code its reason
// stands for as far as the answer to a signal goes (DisabledExchangeDisconnected or none).
func (b Bot) disabledCode() DisabledCode {
	if b.DisabledCode != "" || !legacyExchangeReasons[b.DisabledReason] {
		return b.DisabledCode
	}
	return DisabledExchangeDisconnected
}

// DisabledError is how a disabled bot refuses a signal or an order: EXCHANGE_DISCONNECTED
// when its exchange connection is why it is disabled, BOT_DISABLED for any other code. It
// is the one Go rule for runtime/trading and the executor; the intake's Lua script applies
// the same test to the gate field FieldDisabledCode, and runtime/intake's tests hold the
// two in agreement for every code.
func (b Bot) DisabledError() *errs.Error {
	if b.disabledCode() == DisabledExchangeDisconnected {
		return errs.New(errs.ExchangeDisconnected, "exchange not connected")
	}
	return errs.New(errs.BotDisabled, "bot disabled")
}
