// Package risk keeps a bot inside its limits: the exposure check before an entry, the
// daily realised loss and consecutive-loss counters that pause a bot (reason Risk) until
// the next UTC day, the consecutive execution errors that pause it (reason Errors) until
// resumed, and the risk score of the Bot risk metrics (decisions 9 and 11 in docs/decisions.md).
//
// The pauses themselves belong to runtime/registry (Pause, StagePause, PauseScript): this
// package decides when a bot must pause and asks for it there.
package risk

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// MaxConsecutiveErrors execution errors in a row pause a bot (decision 11).
const MaxConsecutiveErrors = 5

// Limits are a bot's risk bounds; zero means no limit.
type Limits struct {
	// MaxExposure is the largest fraction of equity the bot's open positions may use.
	MaxExposure decimal.Decimal
	// DailyLossLimit is the realised net loss, in quote currency, of one UTC day.
	DailyLossLimit       decimal.Decimal
	MaxConsecutiveLosses int
}

// LimitsOf parses the projected bot's limits.
func LimitsOf(r registry.Risk) (Limits, error) {
	var l Limits
	var err error
	if r.MaxExposure != "" {
		if l.MaxExposure, err = decimal.NewFromString(r.MaxExposure); err != nil || l.MaxExposure.IsNegative() {
			return Limits{}, fmt.Errorf("risk.maxExposure %q is not a fraction", r.MaxExposure)
		}
	}
	if r.DailyLossLimit != "" {
		if l.DailyLossLimit, err = decimal.NewFromString(r.DailyLossLimit); err != nil || l.DailyLossLimit.IsNegative() {
			return Limits{}, fmt.Errorf("risk.dailyLossLimit %q is not an amount", r.DailyLossLimit)
		}
	}
	l.MaxConsecutiveLosses = int(r.MaxConsecutiveLosses)
	return l, nil
}

// Counters are a bot's running risk figures.
type Counters struct {
	// Day is the UTC date (2006-01-02) DayPnl belongs to.
	Day string
	// DayPnl is the net realised PnL (after fees) of Day.
	DayPnl            decimal.Decimal
	ConsecutiveLosses int
	ConsecutiveErrors int
	// Trades is how many realised trades the counters have taken in (AfterTrade): their
	// version. Of two copies of a bot's counters (Redis's, and the record a lost Redis gets
	// them back from: PostgreSQL's book state or the SignalBot's status) the one with more
	// trades is the later.
	Trades int64
}

// Fields of the risk hash.
const (
	fieldDay    = "day"
	fieldDayPnl = "dayPnl"
	fieldLosses = "consecutiveLosses"
	fieldErrors = "consecutiveErrors"
	// FieldTrades is the counters' version (Counters.Trades), named for the scripts that
	// write a recorded copy back only over an older one.
	FieldTrades = "trades"
	dayLayout   = "2006-01-02"
)

// DailyLossUsed is the realised net loss of the UTC day of now (never negative).
func (c Counters) DailyLossUsed(now time.Time) decimal.Decimal {
	if c.Day != now.UTC().Format(dayLayout) || !c.DayPnl.IsNegative() {
		return decimal.Zero
	}
	return c.DayPnl.Neg()
}

// ReadCounters reads a bot's counters on any client (a transaction's too).
func ReadCounters(ctx context.Context, c redis.Cmdable, botID string) (Counters, error) {
	return ReadCountersLater(ctx, c, botID)()
}

// ReadCountersLater queues the read on c (a pipeline) and returns the decoder to call once
// the pipeline has run.
func ReadCountersLater(ctx context.Context, c redis.Cmdable, botID string) func() (Counters, error) {
	read := ReadCountersTextLater(ctx, c, botID)
	return func() (Counters, error) {
		cnt, _, err := read()
		return cnt, err
	}
}

func parseCounters(botID string, cmd *redis.MapStringStringCmd) (Counters, error) {
	v, err := cmd.Result()
	if err != nil {
		return Counters{}, err
	}
	out := Counters{Day: v[fieldDay]}
	if s := v[fieldDayPnl]; s != "" {
		if out.DayPnl, err = decimal.NewFromString(s); err != nil {
			return Counters{}, fmt.Errorf("risk %s: corrupt dayPnl: %w", botID, err)
		}
	}
	out.ConsecutiveLosses, _ = strconv.Atoi(v[fieldLosses])
	out.ConsecutiveErrors, _ = strconv.Atoi(v[fieldErrors])
	out.Trades, _ = strconv.ParseInt(v[FieldTrades], 10, 64)
	return out, nil
}

// StageCounters writes the counters into a transaction.
func StageCounters(ctx context.Context, p redis.Pipeliner, botID string, c Counters) {
	p.HSet(ctx, store.RiskCounters(botID), CountersArgs(c)...)
}

// CountersArgs are the counters as stored: field, value, ... (StageCounters, CountersLua).
func CountersArgs(c Counters) []any {
	return []any{fieldDay, c.Day, fieldDayPnl, c.DayPnl.String(),
		fieldLosses, strconv.Itoa(c.ConsecutiveLosses), fieldErrors, strconv.Itoa(c.ConsecutiveErrors),
		FieldTrades, strconv.FormatInt(c.Trades, 10)}
}

// CountersLua returns the Lua statement that writes the counters inside a caller's script:
// the hash is KEYS[keyAt], CountersArgs are ARGV[argAt] to ARGV[argAt+2×len(CounterFields)-1].
func CountersLua(keyAt, argAt int) string {
	return fmt.Sprintf("redis.call('HSET', KEYS[%d], unpack(ARGV, %d, %d))\n", keyAt, argAt, argAt+2*len(CounterFields)-1)
}

// ReadCountersTextLater is ReadCountersLater whose decoder also returns the stored text of
// each field CountersArgs writes, by field (absent: not stored), for a caller whose script
// writes only while the hash still holds those texts.
func ReadCountersTextLater(ctx context.Context, c redis.Cmdable, botID string) func() (Counters, map[string]string, error) {
	cmd := c.HGetAll(ctx, store.RiskCounters(botID))
	return func() (Counters, map[string]string, error) {
		cnt, err := parseCounters(botID, cmd)
		return cnt, cmd.Val(), err
	}
}

// RecordInto puts c into rec, the runtime state a bot's projection writes back over a Redis
// that lost it or holds it older (registry.Recorded). Counters that have taken in no trade
// are not recorded: there is nothing a lost Redis would miss.
func (c Counters) RecordInto(rec *registry.Recorded) {
	if c.Trades <= 0 {
		return
	}
	rec.Counters, rec.CountersVersion, rec.CountersVersionField = CountersArgs(c), c.Trades, FieldTrades
}

// CounterFields are the fields of the counters hash, the ones CountersArgs writes.
var CounterFields = [...]string{fieldDay, fieldDayPnl, fieldLosses, fieldErrors, FieldTrades}

// NextUTCDay is the start of the UTC day after now.
func NextUTCDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// AfterTrade adds a realised trade's net PnL (after fees) to the counters: a negative net
// is a loss (break-even is not), a loss extends the run of consecutive losses and anything
// else ends it. It returns a Risk pause until the next UTC day when this trade makes the
// day's realised loss reach the daily limit or the run reach the maximum.
func (c *Counters) AfterTrade(net decimal.Decimal, now time.Time, l Limits) *registry.Pause {
	today := now.UTC().Format(dayLayout)
	if c.Day != today {
		c.Day, c.DayPnl = today, decimal.Zero
	}
	c.DayPnl = c.DayPnl.Add(net)
	c.Trades++
	if !net.IsNegative() {
		c.ConsecutiveLosses = 0
		return nil
	}
	c.ConsecutiveLosses++
	hitDaily := l.DailyLossLimit.IsPositive() && c.DailyLossUsed(now).GreaterThanOrEqual(l.DailyLossLimit)
	hitRun := l.MaxConsecutiveLosses > 0 && c.ConsecutiveLosses >= l.MaxConsecutiveLosses
	if hitDaily || hitRun {
		return &registry.Pause{Reason: registry.PauseRisk, Until: NextUTCDay(now)}
	}
	return nil
}

// errorScript counts and pauses in one step, so that no crash can reset the count without
// the pause. KEYS[1] the risk counters, KEYS[2] the bot's hash; ARGV the maximum, now (ms),
// the bot ID, the pause reason; KEYS[3] the bot's archive stream.
var errorScript = registry.PauseScript(`
local n = redis.call('HINCRBY', KEYS[1], '` + fieldErrors + `', 1)
if n < tonumber(ARGV[1]) then return {n, 0} end
redis.call('HSET', KEYS[1], '` + fieldErrors + `', 0)
return {n, set_pause(KEYS[2], KEYS[3], ARGV[3], ARGV[4], '0', tonumber(ARGV[2]))}
`)

// RecordError counts an execution error; the MaxConsecutiveErrors-th in a row pauses the
// bot with reason Errors until resumed and restarts the count (so a resumed bot gets
// MaxConsecutiveErrors more tries). It returns the pause when one was written.
func RecordError(ctx context.Context, rdb redis.Scripter, botID string, now time.Time) (*registry.Pause, error) {
	v, err := errorScript.Run(ctx, rdb, []string{store.RiskCounters(botID), store.Bot(botID), store.ArchiveOf(botID)},
		MaxConsecutiveErrors, now.UnixMilli(), botID, registry.PauseErrors).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(v) == 2 && v[1] == 1 {
		return &registry.Pause{Reason: registry.PauseErrors}, nil
	}
	return nil, nil
}

// Purge removes a deleted bot's risk counters.
func Purge(ctx context.Context, rdb redis.Cmdable, botID string) error {
	return rdb.Del(ctx, store.RiskCounters(botID)).Err()
}

// CheckExposure refuses an entry that would make the bot's open positions use more than
// MaxExposure of equity. used is what the bot's open positions use (margin on futures,
// cost on spot), add what the new order would use, available the free quote balance;
// equity is available + used (positions valued at entry). The refusal is INVALID_AMOUNT
// (1002, "amount too large") with details exposure and maxExposure.
func CheckExposure(l Limits, used, add, available decimal.Decimal) error {
	if !l.MaxExposure.IsPositive() || !add.IsPositive() {
		return nil
	}
	after := Exposure(used.Add(add), available.Add(used))
	if after.GreaterThan(l.MaxExposure) {
		return errs.New(errs.InvalidAmount, "order would raise the bot's exposure to %s of equity; maxExposure is %s",
			after.StringFixed(4), l.MaxExposure).
			WithDetails(map[string]any{"exposure": after.Round(6), "maxExposure": l.MaxExposure})
	}
	return nil
}

// Equity is a bot's equity as its exposure and copy signals' sizing measure it: the
// account's free quote balance plus what the bot's own open positions use (margin on
// futures, cost on spot, at their entry prices). Unrealised PnL is left out, so a figure
// rests on booked money only. used is that second part (the exposure's numerator).
func Equity(free decimal.Decimal, open []position.Position) (equity, used decimal.Decimal) {
	used = decimal.Zero
	for _, p := range open {
		used = used.Add(p.Margin.Decimal)
	}
	return free.Add(used), used
}

// Exposure is used / equity (0 when equity is not positive and nothing is used, 1 when
// something is used of nothing).
func Exposure(used, equity decimal.Decimal) decimal.Decimal {
	if !equity.IsPositive() {
		if used.IsPositive() {
			return decimal.NewFromInt(1)
		}
		return decimal.Zero
	}
	return used.Div(equity)
}
