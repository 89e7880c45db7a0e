package store

// Keys of the trading core: the paper exchange, the executor's order/position/trade book,
// risk counters and runtime pauses, and the price watcher.
//
//	sigops:paper:{id}:orders              hash   paper exchange orders by client order ID (JSON)
//	sigops:paper:{id}:pos                 hash   paper exchange per-bot holdings and futures positions
//	sigops:book:{bot}:pos:{symbol}        string one open position of a bot (JSON)
//	sigops:book:{bot}:positions           set    symbols with an open position of a bot
//	sigops:book:{bot}:order:{clientId}    string one order of a bot (JSON)
//	sigops:book:{bot}:orders              list   client order IDs of a bot, newest first
//	sigops:book:{bot}:trades              list   realised trades of a bot (JSON), oldest first
//	sigops:risk:{bot}                     hash   risk counters: day, dayPnl, consecutiveLosses, consecutiveErrors
//	sigops:sig:{signalId}                 hash   executor progress of one signal: plan, leg requests, applied legs
//	sigops:watch                          hash   positions with a stop-loss, take-profit or liquidation price
//	sigops:watch:fired:{signalId}         string marker: the watcher enqueued this trigger
//	sigops:events:bots                    pubsub bot IDs whose runtime availability changed
//
// Runtime pauses live in the bot's own hash (Bot) as the fields registry.FieldPause and
// registry.FieldPauseUntil, written only through runtime/registry's pause API and read by
// webhookd's intake script, the executor and the controller.

// BotEvents is the channel on which runtime/registry publishes the ID of a bot whose runtime
// pause changed, so that the manager mirrors it into the SignalBot's status.
func BotEvents() string { return prefix + "events:bots" }

// PaperOrders holds the paper exchange's orders of one account, by client order ID.
func PaperOrders(accountID string) string { return PaperAccount(accountID) + ":orders" }

// PaperPositions holds the paper exchange's per-bot spot holdings and futures positions of
// one account. Bots sharing an account never net against each other.
func PaperPositions(accountID string) string { return PaperAccount(accountID) + ":pos" }

// BookPosition is one open position of a bot on a symbol.
func BookPosition(botID, symbol string) string {
	return prefix + "book:" + botID + ":pos:" + symbol
}

// BookPositions is the set of symbols on which a bot has an open position.
func BookPositions(botID string) string { return prefix + "book:" + botID + ":positions" }

// BookOrder is one order of a bot, by client order ID.
func BookOrder(botID, clientOrderID string) string {
	return prefix + "book:" + botID + ":order:" + clientOrderID
}

// BookOrders lists a bot's client order IDs, newest first.
func BookOrders(botID string) string { return prefix + "book:" + botID + ":orders" }

// BookTrades lists a bot's realised trades, oldest first (analytics reads it).
func BookTrades(botID string) string { return prefix + "book:" + botID + ":trades" }

// RiskCounters holds a bot's risk counters.
func RiskCounters(botID string) string { return prefix + "risk:" + botID }

// SignalProgress is the executor's progress record of one signal (its exactly-once guard).
func SignalProgress(signalID string) string { return prefix + "sig:" + signalID }

// Watch is the price watcher's index of positions with exit prices.
func Watch() string { return prefix + "watch" }

// WatchFired marks a watcher trigger as enqueued.
func WatchFired(signalID string) string { return prefix + "watch:fired:" + signalID }
