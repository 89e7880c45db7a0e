package store

// Keys of the trading core: the paper exchange, the executor's order/position/trade book,
// risk counters and runtime pauses, and the price watcher.
//
// A bot's book, risk counters and signal progress carry its partition's tag ({N}), as does
// the watch index of that partition and the bot's hash (which holds the runtime pause), so
// that the executor's booking transaction (progress, order, position, positions set,
// trades, day aggregates, risk counters, pause, watch entry) is one slot. A paper
// account's keys carry the account ID as their tag, so that the paper exchange's fill
// script (balance, order, holdings) is one slot.
//
//	sigops:paper:{id}                       hash   simulated balance of a paper account
//	sigops:paper:{id}:order:<clientId>      string one paper exchange order (JSON), expiring (paper.OrderTTL)
//	sigops:paper:{id}:orders                hash   paper exchange orders by client order ID (JSON), the layout
//	                                               before per-order keys: read as a fallback, drained by key migration
//	sigops:paper:{id}:pos                   hash   paper exchange per-bot holdings and futures positions
//	sigops:paper:{id}:archive               stream the account's changes waiting for PostgreSQL (with a database)
//	sigops:paper:accounts:{N}               set    paper account IDs of partition N (the archiver's sweep)
//	sigops:book:{N}:<bot>:pos:<symbol>      string one open position of a bot (JSON)
//	sigops:book:{N}:<bot>:positions         set    symbols with an open position of a bot
//	sigops:book:{N}:order:<clientId>        string one order of a bot (position's compact form), with the
//	                                               result of a signal whose only order it is
//	sigops:book:{N}:<bot>:orders            list   client order IDs of a bot, newest first
//	sigops:book:{N}:<bot>:trades            list   realised trades of a bot (JSON), oldest first
//	sigops:book:{N}:<bot>:days              hash   a bot's trades aggregated per UTC day (runtime/analytics): field
//	                                               YYYY-MM-DD (JSON), "start" (starting equity), "trades" (count)
//	sigops:risk:{N}:<bot>                   hash   risk counters: day, dayPnl, consecutiveLosses, consecutiveErrors
//	sigops:sig:{N}:<signalId>               hash   executor progress of one signal: plan, leg requests, applied legs
//	sigops:watch:{N}                        hash   the partition's positions with a stop-loss, take-profit or liquidation price
//	sigops:watch:{N}:fired:<attempt>        string marker: the watcher enqueued this trigger attempt
//	sigops:midem:{N}:<bot>:<sha256>         string first signalId and request hash of a manual order's idempotency key (24 h)
//	sigops:events:bots                      pubsub bot IDs whose runtime availability changed
//	sigops:events:results                   pubsub results as they are stored (runtime/events: the dashboard's live updates)
//
// Runtime pauses live in the bot's own hash (Bot) as the fields registry.FieldPause and
// registry.FieldPauseUntil, written only through runtime/registry's pause API and read by
// webhookd's intake script, the executor and the controller.

// BotEvents is the channel on which runtime/registry publishes the ID of a bot whose runtime
// pause changed, so that the manager mirrors it into the SignalBot's status.
func BotEvents() string { return prefix + "events:bots" }

// ResultEvents is the channel on which every stored result is announced (bot, signal,
// status), so that open dashboard pages update without polling (runtime/events).
func ResultEvents() string { return prefix + "events:results" }

// PaperAccount is the simulated balance of one paper account.
func PaperAccount(id string) string { return prefix + "paper:{" + id + "}" }

// PaperOrder is one order of the paper exchange on an account, by client order ID.
func PaperOrder(accountID, clientOrderID string) string {
	return PaperAccount(accountID) + ":order:" + clientOrderID
}

// PaperOrders is the hash that held a paper account's orders by client order ID before each
// order had its own expiring key (PaperOrder); it is only read and drained.
func PaperOrders(accountID string) string { return PaperAccount(accountID) + ":orders" }

// PaperArchive is the stream of a paper account's changes (balance, margin, one holding, a
// refill) waiting for PostgreSQL, in the account's slot (runtime/exchange/paper record.go).
func PaperArchive(accountID string) string { return PaperAccount(accountID) + ":archive" }

// PaperAccountsOf is the set of paper account IDs of partition p (store.PartitionOf of the
// account ID): the archiver of the partition sweeps their streams.
func PaperAccountsOf(partition int) string {
	return prefix + "paper:accounts:" + partitionTag(partition)
}

// PaperPositions holds the paper exchange's per-bot spot holdings and futures positions of
// one account. Bots sharing an account never net against each other.
func PaperPositions(accountID string) string { return PaperAccount(accountID) + ":pos" }

// BookPosition is one open position of a bot on a symbol.
func BookPosition(botID, symbol string) string { return bookKey(botID, ":pos:", symbol) }

// BookPositions is the set of symbols on which a bot has an open position.
func BookPositions(botID string) string { return bookKey(botID, ":positions", "") }

// BookOrder is one order of a bot, by client order ID.
//
// The key names the partition and the client order ID, not the bot: a client order ID is
// unique (derived from a signal ID, runtime/order), and a signal's result can then be found
// in its order record from the signal ID alone (BookOrderIn), which lets a single-order
// signal's record hold its result instead of a key of its own (runtime/queue). The record
// names its bot, which every reader checks.
func BookOrder(botID, clientOrderID string) string {
	return BookOrderIn(PartitionOf(botID), clientOrderID)
}

// BookOrderIn is the order record of clientOrderID in partition p (see BookOrder).
func BookOrderIn(p int, clientOrderID string) string {
	return prefix + "book:" + partitionTag(p) + ":order:" + clientOrderID
}

// LegacyBookOrder is where a bot's order record was before BookOrder left the bot out of
// the name: read only by the key migration (runtime/store/keymigration, BookOrderNames).
func LegacyBookOrder(botID, clientOrderID string) string {
	return bookKey(botID, ":order:", clientOrderID)
}

// BookOrders lists a bot's client order IDs, newest first.
func BookOrders(botID string) string { return bookKey(botID, ":orders", "") }

// BookTrades lists a bot's realised trades, oldest first (analytics reads it).
func BookTrades(botID string) string { return bookKey(botID, ":trades", "") }

// BookDays holds a bot's trades aggregated per UTC day, its starting equity and the number
// of trades the days count; runtime/analytics owns its fields, the booking transaction
// writes them beside the trade list.
func BookDays(botID string) string { return bookKey(botID, ":days", "") }

// bookKey is "sigops:book:{N}:<bot>" + kind + name, built in one allocation (the executor
// names several book keys per signal).
func bookKey(botID, kind, name string) string {
	return prefix + "book:" + botTag(botID) + ":" + botID + kind + name
}

// RiskCounters holds a bot's risk counters.
func RiskCounters(botID string) string { return prefix + "risk:" + botTag(botID) + ":" + botID }

// SignalProgress is the executor's progress record of one signal (its exactly-once guard),
// in the slot of the bot the signal was queued for.
func SignalProgress(botID, signalID string) string {
	return prefix + "sig:" + botTag(botID) + ":" + signalID
}

// Watch is one partition's part of the price watcher's index of positions with exit prices
// (field "<bot>|<symbol>"). The watcher reads every partition's.
func Watch(partition int) string { return prefix + "watch:" + partitionTag(partition) }

// WatchFired marks a watcher trigger's attempt of a bot's position as enqueued; name is the
// attempt's signal ID before it is placed in the bot's partition, so that producers that
// place IDs and producers that do not name the marker alike.
func WatchFired(botID, name string) string {
	return prefix + "watch:" + botTag(botID) + ":fired:" + name
}

// ManualIdempotency is the record of one idempotency key (its SHA-256, hex, over the
// caller's user ID and the key) of a manual order on a bot: the first order's signal ID and
// the SHA-256 of its request, in the bot's partition slot with the stream the order goes
// to, so that the check, the record and the enqueue are one script (queue.EnqueueOnce).
func ManualIdempotency(botID, hash string) string {
	return prefix + "midem:" + botTag(botID) + ":" + botID + ":" + hash
}

// ApprovalQueued marks, in the bot's slot, that the approved signal signalID was queued:
// approving twice (two clicks, two replicas) queues it once.
func ApprovalQueued(botID, signalID string) string {
	return prefix + "approved:" + botTag(botID) + ":" + botID + ":" + signalID
}
