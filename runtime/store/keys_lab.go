package store

// Keys of the Strategy Lab's wallet (runtime/wallet) and jobs (runtime/lab). Every one of a
// user's wallet and job keys carries the queue partition tag of the USER ID
// ({N} = PartitionOf(userID)), so that charging a job (the balance, its ledger entry, the
// job record, the user's job index and the dispatch entry) is one WATCH/MULTI in one slot,
// and so is finishing it (the record, the refund and its ledger entry). The dispatch stream
// of partition N is served by the executor holding queue partition N's lease: the lease
// that orders a partition's signals is also the lease of its jobs.
//
//	sigops:wallet:{N}:<userId>          string  Strategy Lab balance in USD (decimal text; absent: 0)
//	sigops:wallet:{N}:<userId>:ledger   stream  every top-up, debit and refund: kind, amount, balance after, job, time
//	sigops:wallet:{N}:<userId>:cache    string  with a database (PostgreSQL the record, the two keys above unused):
//	                                            "<version> <balance>", TTL 10 min
//	sigops:lab:{N}:job:<jobId>          hash    one job: owner, request, state, cost, seed, result
//	sigops:lab:{N}:job:<jobId>:exp      hash    the job's experiments' outcomes, field = experiment index (HSETNX)
//	sigops:lab:{N}:job:<jobId>:equity   hash    the experiments' equity curves (at most 500 points), field = experiment index (HSETNX)
//	sigops:lab:{N}:user:<userId>:jobs   zset    a user's job IDs, score = creation time (ms)
//	sigops:lab:{N}:dispatch             stream  jobs queued on partition N, read by the consumer group "lab"

// Wallet is a user's Strategy Lab balance.
func Wallet(userID string) string { return prefix + "wallet:" + botTag(userID) + ":" + userID }

// WalletCache is a user's balance cached from PostgreSQL with its version (runtime/wallet).
func WalletCache(userID string) string { return Wallet(userID) + ":cache" }

// WalletLedger is the stream of a user's wallet movements, beside the balance.
func WalletLedger(userID string) string { return Wallet(userID) + ":ledger" }

// LabJob is one Strategy Lab job of a user, in the user's partition slot.
func LabJob(userID, jobID string) string { return prefix + "lab:" + botTag(userID) + ":job:" + jobID }

// LabExperiments holds the outcomes of a job's experiments, one field per experiment.
func LabExperiments(userID, jobID string) string { return LabJob(userID, jobID) + ":exp" }

// LabEquity holds the equity curves of a job's experiments, one field per experiment,
// beside their outcomes: a curve is read only to draw it, so the result stays small.
func LabEquity(userID, jobID string) string { return LabJob(userID, jobID) + ":equity" }

// LabUserJobs is a user's job index, newest last by creation time.
func LabUserJobs(userID string) string {
	return prefix + "lab:" + botTag(userID) + ":user:" + userID + ":jobs"
}

// LabDispatch is the stream of jobs queued on one partition.
func LabDispatch(partition int) string {
	return prefix + "lab:" + partitionTag(partition) + ":dispatch"
}
