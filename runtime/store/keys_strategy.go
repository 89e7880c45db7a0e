package store

// Keys of strategy signals, in the bot's partition slot ({N}), beside the partition's
// streams: the runner's script (runtime/strategyrun) checks and moves a bot's mark and XADDs
// its envelopes in one step on one slot.
//
//	sigops:strategy:{N}:bots          set   {N}  IDs of the partition's bots that have a strategy (runtime/registry writes it with the projection)
//	sigops:strategy:{N}:state:<bot>   hash  {N}  the runner's state of one bot: the mark (open time of the last evaluated candle), the last signal emitted, the last status announcement

// StrategyBots is the set of a partition's bots that run a strategy: the runner that holds
// the partition's lease reads it instead of every bot's projection.
func StrategyBots(partition int) string {
	return prefix + "strategy:" + partitionTag(partition) + ":bots"
}

// StrategyState is the runner's state of one strategy bot.
func StrategyState(botID string) string {
	return prefix + "strategy:" + botTag(botID) + ":state:" + botID
}
