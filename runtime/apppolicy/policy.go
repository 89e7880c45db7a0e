package apppolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// Limits a POLICY_LIMIT names in details.limit, besides LimitKillSwitch.
const (
	LimitBots          = "bots"
	LimitVenue         = "venue"
	LimitOrdersPerHour = "ordersPerHour"
	LimitOrderNotional = "orderNotional"
	LimitDayNotional   = "dayNotional"
)

// DefaultOrderNotional and DefaultDayNotional are, in USDT, the most an app may commit
// of the user's real money in one order and in one UTC day unless its policy says
// otherwise: entries on exchange accounts and wallet charges.
var (
	DefaultOrderNotional = decimal.NewFromInt(100)
	DefaultDayNotional   = decimal.NewFromInt(500)
)

// MaxNotional bounds a notional limit, in USDT.
var MaxNotional = decimal.NewFromInt(10_000_000)

// notionalPlaces is the precision notional is counted in: 1e-8 USDT, an integer the
// admission script adds exactly (Lua's numbers are doubles: integers are exact to 2^53,
// 90 million USDT at this precision, past the largest limit).
const notionalPlaces = 8

// DefaultOrdersPerHour is the orders an app may place in a UTC hour unless its policy says
// otherwise.
const DefaultOrdersPerHour = 60

// MaxOrdersPerHour bounds what a policy may allow.
const MaxOrdersPerHour = 10000

// Policy is what one connected app (an OAuth client of the user) may do with the user's
// accounts, beyond its token's scope. The person sets it when consenting and changes it in
// Connected apps; an app with no stored policy has the defaults (DefaultPolicy).
type Policy struct {
	// Bots are the IDs of the bots the app may act on; empty: all of the user's bots. An
	// app limited to chosen bots may not create bots either.
	Bots []string `json:"bots"`
	// Live lets the app trade on exchange accounts (real money), when its scope is mcp:live
	// too; false keeps it on paper whatever its scope.
	Live bool `json:"live"`
	// OrdersPerHour caps the orders the app places in a UTC hour (entries and exits
	// counted; exits never refused, so the app can always get the user flat).
	OrdersPerHour int `json:"ordersPerHour"`
	// OrderNotional and DayNotional cap, in USDT, what the app commits of the user's real
	// money: one order's notional (amount × reference price) or wallet charge, and the sum
	// of them in a UTC day. Zero: no cap. Exits are never refused by them and add nothing.
	OrderNotional httpapi.Number `json:"orderNotional"`
	DayNotional   httpapi.Number `json:"dayNotional"`
	// Approve makes the app's live entries whose notional is above ApproveAbove (zero:
	// every one) wait for the user's approval (runtime/approval) before anything is queued.
	Approve      bool           `json:"approve"`
	ApproveAbove httpapi.Number `json:"approveAbove"`
}

// DefaultPolicy is the policy of an app the person set none for: every bot, the venue its
// scope allows (the consent to mcp:live is the choice of live), DefaultOrdersPerHour, the
// default notional caps, and every live entry waiting for the user's approval.
func DefaultPolicy() Policy {
	return Policy{Live: true, OrdersPerHour: DefaultOrdersPerHour, OrderNotional: httpapi.Num(DefaultOrderNotional), DayNotional: httpapi.Num(DefaultDayNotional),
		Approve: true}
}

// Validate refuses a policy no limit can be read from.
func (p Policy) Validate() error {
	if p.OrdersPerHour < 1 || p.OrdersPerHour > MaxOrdersPerHour {
		return errs.New(errs.InvalidParameter, "orders per hour must be a whole number from 1 to %d", MaxOrdersPerHour).
			WithDetails(map[string]any{"parameter": "ordersPerHour"})
	}
	for name, v := range map[string]decimal.Decimal{"orderNotional": p.OrderNotional.Decimal, "dayNotional": p.DayNotional.Decimal, "approveAbove": p.ApproveAbove.Decimal} {
		if v.IsNegative() || v.GreaterThan(MaxNotional) || v.Exponent() < -notionalPlaces && !v.Equal(v.Truncate(notionalPlaces)) {
			return errs.New(errs.InvalidParameter, "%s must be from 0 (no limit) to %s USDT, to at most %d decimals", name, MaxNotional, notionalPlaces).
				WithDetails(map[string]any{"parameter": name})
		}
	}
	for _, b := range p.Bots {
		if b == "" || strings.Contains(b, ",") || len(b) > 64 {
			return errs.New(errs.InvalidParameter, "bot %q is not a bot ID", b).WithDetails(map[string]any{"parameter": "bots"})
		}
	}
	return nil
}

// Policies reads and writes apps' policies and admits their calls.
type Policies struct {
	rdb redis.UniversalClient
	now func() time.Time
	// record is PostgreSQL's (nil: Redis only). See record.go.
	record *record
}

// Options configure Policies.
type Options struct {
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// DB is PostgreSQL, the record of the policies and kill switches (nil: Redis only, as a
	// test or an installation without a database runs).
	DB *pgxpool.Pool
}

// New returns the policies on rdb.
func New(rdb redis.UniversalClient, o Options) *Policies {
	if o.Now == nil {
		o.Now = time.Now
	}
	ps := &Policies{rdb: rdb, now: o.Now}
	if o.DB != nil {
		ps.record = &record{db: o.DB}
	}
	return ps
}

// NewPolicies returns the policies on rdb alone; now is their clock (nil: time.Now).
func NewPolicies(rdb redis.UniversalClient, now func() time.Time) *Policies {
	return New(rdb, Options{Now: now})
}

// Get is the policy of user's app clientID (DefaultPolicy when none is stored).
func (ps *Policies) Get(ctx context.Context, userID, clientID string) (Policy, error) {
	if err := ps.cached(ctx, userID); err != nil {
		return Policy{}, err
	}
	m, err := ps.rdb.HGetAll(ctx, store.UserAppPolicy(userID, clientID)).Result()
	if err != nil {
		return Policy{}, err
	}
	return policyOf(m), nil
}

// Set stores p as the policy of user's app clientID: in PostgreSQL first when it records
// them (refused there: changed nowhere), then in Redis.
func (ps *Policies) Set(ctx context.Context, userID, clientID string, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var version int64
	if ps.record != nil {
		var err error
		if version, err = ps.record.put(ctx, userID, clientID, p, ps.now().UTC()); err != nil {
			return err
		}
	}
	return putScript.Run(ctx, ps.rdb, []string{store.UserAppPolicy(userID, clientID)}, append([]any{version}, fieldsOf(p)...)...).Err()
}

// policyOf reads a stored policy hash; absent fields keep their defaults.
func policyOf(m map[string]string) Policy {
	p := DefaultPolicy()
	if v, ok := m["live"]; ok {
		p.Live = v == "1"
	}
	if v := strings.Trim(m["bots"], ","); v != "" {
		p.Bots = strings.Split(v, ",")
	}
	if n, err := strconv.Atoi(m["ordersPerHour"]); err == nil && n > 0 {
		p.OrdersPerHour = n
	}
	if v, ok := fromUnits(m["orderNotional"]); ok {
		p.OrderNotional = httpapi.Num(v)
	}
	if v, ok := fromUnits(m["dayNotional"]); ok {
		p.DayNotional = httpapi.Num(v)
	}
	if v, ok := m["approve"]; ok {
		p.Approve = v == "1"
	}
	if v, ok := fromUnits(m["approveAbove"]); ok {
		p.ApproveAbove = httpapi.Num(v)
	}
	return p
}

// units is a notional in the admission's integer units (1e-8 USDT), rounded up: a
// fraction of a unit counts as a whole one, never as nothing.
func units(d decimal.Decimal) string { return d.Shift(notionalPlaces).Ceil().String() }

// fromUnits reads units back; false for a field absent or not a number.
func fromUnits(s string) (decimal.Decimal, bool) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, false
	}
	return d.Shift(-notionalPlaces), true
}

// botList is bots as stored: ",id1,id2," (the admission script finds ",id," in it), "" for
// every bot.
func botList(bots []string) string {
	if len(bots) == 0 {
		return ""
	}
	return "," + strings.Join(bots, ",") + ","
}

// Call is what the admission of one app call needs to know of it.
type Call struct {
	UserID, ClientID string
	// BotID is the bot the call acts on; empty for a call on no bot.
	BotID string
	// CreatesBot: the call makes a new bot (refused to an app limited to chosen bots).
	CreatesBot bool
	// Live: the call reaches an exchange account (its venue scope is mcp:live).
	Live bool
	// Order: the call places or withdraws an order (counted against OrdersPerHour); Exit:
	// it only reduces or protects a position, or cancels (counted, never refused by it).
	Order, Exit bool
	// Notional is, in USDT, what the call commits of the user's real money: the notional of
	// a live entry's sized order (at its reference price), or a wallet charge. Zero for
	// anything else; an exit's is not counted.
	Notional httpapi.Number
	// RaisesSize: the call raises the size or leverage of a live bot's entries, or creates
	// a bot on an exchange account (refused under a per-order cap: the bot's own entries
	// are sized later, where the app's cap cannot hold them).
	RaisesSize bool
	// Approved: the user approved this call (runtime/approval), which is admitted now and
	// not held for approval again.
	Approved bool
}

// admitScript admits one call of an app, in one round trip, atomically: the kill switch,
// then the policy's bots and venue, then the hourly order count and the notional caps; the
// counts are added to only when the call is admitted, so no two concurrent calls both take
// the last order or the last USDT of the day.
//
//	KEYS[1] the user's kill switch, KEYS[2] the app's policy hash, KEYS[3] the app's order
//	count of this UTC hour, KEYS[4] its notional of this UTC day (all in the user's slot)
//	ARGV: botId, createsBot, live, order, exit, default orders per hour, ms to the hour's
//	end (relative: the count must not depend on Redis's clock agreeing with ours), the
//	call's notional in units, ms to the day's end, default order and day caps in units,
//	dry ("1": decide and count nothing), raisesSize, approved, and with PostgreSQL
//	KEYS[5] the user's marker that Redis holds the recorded policies (record.go) and
//	ARGV[15] "1": without it the script answers "uncached" and decides nothing (a switch
//	that is on in Redis refuses first: it needs no copy to be believed)
//
// A live entry the policy holds for the user's approval answers "approval" once every
// limit has passed, and nothing is counted: it is counted when the user approves it.
//
// Returns {limit, a, b, c}: limit "" when admitted; otherwise the limit that refused, with
// a, b and c what it reports (used, cap and, for a notional cap, the call's notional).
var admitScript = redis.NewScript(`
local since = redis.call('GET', KEYS[1])
if since then return {'killSwitch', since, '', ''} end
if ARGV[15] == '1' and redis.call('EXISTS', KEYS[5]) == 0 then return {'uncached', '', '', ''} end
local p = redis.call('HMGET', KEYS[2], 'live', 'bots', 'ordersPerHour', 'orderNotional', 'dayNotional', 'approve', 'approveAbove')
local bots = p[2] or ''
if bots ~= '' then
  if ARGV[2] == '1' then return {'bots', bots, '', ''} end
  if ARGV[1] ~= '' and not string.find(bots, ',' .. ARGV[1] .. ',', 1, true) then return {'bots', bots, '', ''} end
end
if ARGV[3] == '1' and p[1] == '0' then return {'venue', 'paper', '', ''} end
if ARGV[13] == '1' and tonumber(p[4] or ARGV[10]) > 0 then return {'orderNotional', 'settings', p[4] or ARGV[10], ''} end
local exit = ARGV[5] == '1'
local used = 0
local cap = tonumber(p[3] or ARGV[6]) or tonumber(ARGV[6])
if ARGV[4] == '1' then
  used = tonumber(redis.call('GET', KEYS[3]) or '0')
  if not exit and used >= cap then return {'ordersPerHour', tostring(used), tostring(cap), ''} end
end
local n = tonumber(ARGV[8])
if n > 0 and not exit then
  local perOrder = p[4] or ARGV[10]
  if tonumber(perOrder) > 0 and n > tonumber(perOrder) then return {'orderNotional', '', perOrder, ARGV[8]} end
  local perDay = p[5] or ARGV[11]
  local day = redis.call('GET', KEYS[4]) or '0'
  if tonumber(perDay) > 0 and tonumber(day) + n > tonumber(perDay) then return {'dayNotional', day, perDay, ARGV[8]} end
end
if n > 0 and not exit and ARGV[3] == '1' and ARGV[14] ~= '1' and (p[6] or '1') == '1' then
  local above = p[7] or '0'
  if n > tonumber(above) then return {'approval', '', above, ARGV[8]} end
end
if ARGV[12] == '1' then return {'', '', '', ''} end
if ARGV[4] == '1' then
  redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
end
if n > 0 and not exit then
  redis.call('INCRBY', KEYS[4], ARGV[8])
  redis.call('PEXPIRE', KEYS[4], ARGV[9])
end
return {'', '', '', ''}
`)

// Admit admits c or refuses it with POLICY_LIMIT naming the limit (or the kill switch),
// and counts it when admitted: one Redis round trip.
func (ps *Policies) Admit(ctx context.Context, c Call) error { return ps.admit(ctx, c, false) }

// Check is Admit's verdict on c with nothing counted: what a dry run reports.
func (ps *Policies) Check(ctx context.Context, c Call) error { return ps.admit(ctx, c, true) }

func (ps *Policies) admit(ctx context.Context, c Call, dry bool) error {
	now := ps.now().UTC()
	hour := now.Truncate(time.Hour)
	next := hour.Add(time.Hour)
	tomorrow := nextUTCDay(now)
	keys := []string{store.UserAppsSuspended(c.UserID), store.UserAppPolicy(c.UserID, c.ClientID),
		store.UserAppOrders(c.UserID, c.ClientID, hour.Format("2006010215")),
		store.UserAppNotional(c.UserID, c.ClientID, now.Format("20060102"))}
	notional := "0"
	if c.Notional.IsPositive() {
		notional = units(c.Notional.Decimal)
	}
	args := []any{c.BotID, flag(c.CreatesBot), flag(c.Live), flag(c.Order), flag(c.Exit),
		DefaultOrdersPerHour, max(next.Sub(now).Milliseconds(), 1), notional, max(tomorrow.Sub(now).Milliseconds(), 1),
		units(DefaultOrderNotional), units(DefaultDayNotional), flag(dry), flag(c.RaisesSize), flag(c.Approved)}
	if ps.record != nil {
		keys = append(keys, store.UserAppsCached(c.UserID))
		args = append(args, "1")
	}
	var res []string
	for range 2 {
		var err error
		if res, err = admitScript.Run(ctx, ps.rdb, keys, args...).StringSlice(); err != nil {
			return err
		}
		if len(res) == 0 || res[0] != "uncached" {
			break
		}
		// Redis lost this user's copy: put it back from the record, then decide.
		if err := ps.recall(ctx, c.UserID); err != nil {
			return err
		}
	}
	if len(res) != 4 {
		return fmt.Errorf("apppolicy: admission answered %v", res)
	}
	return refusalOf(c, res, next, tomorrow)
}

// refusalOf is Admit's answer for the admission script's reply res to call c: nil when
// admitted, else the refusal naming the limit (next and tomorrow: when the hour's and the
// day's counts reset).
func refusalOf(c Call, res []string, next, tomorrow time.Time) error {
	switch res[0] {
	case "":
		return nil
	case "uncached":
		return unavailable(errors.New("apppolicy: Redis lost the user's copy again while it was put back"))
	case "approval":
		above, _ := fromUnits(res[2])
		return &ApprovalNeeded{Above: above, Notional: c.Notional.Decimal}
	case LimitKillSwitch:
		return Refusal(sinceOf(res[1]))
	case LimitBots:
		allowed := strings.Split(strings.Trim(res[1], ","), ",")
		what := "bot " + c.BotID + " is not one of the bots the user allowed this app"
		if c.CreatesBot {
			what = "this app may act only on the bots the user chose, and may not create bots"
		}
		return errs.New(errs.PolicyLimit, "%s; the user changes the app's bots in the dashboard's Connected apps", what).
			WithDetails(map[string]any{"limit": LimitBots, "value": allowed, "used": c.BotID, "resetsAt": nil})
	case LimitVenue:
		return errs.New(errs.PolicyLimit, "this app may trade on paper accounts only, and the call reaches an exchange account (real money); "+
			"the user allows live trading for the app in the dashboard's Connected apps").
			WithDetails(map[string]any{"limit": LimitVenue, "value": "paper", "used": "live", "resetsAt": nil})
	case LimitOrdersPerHour:
		used, _ := strconv.Atoi(res[1])
		limit, _ := strconv.Atoi(res[2])
		return errs.New(errs.PolicyLimit, "this app placed %d orders this hour, its limit; entries resume at %s (exits are never refused)",
			used, next.Format(time.RFC3339)).WithDetails(map[string]any{"limit": LimitOrdersPerHour, "value": limit, "used": used,
			"resetsAt": next.Format(time.RFC3339)})
	case LimitOrderNotional:
		limit, _ := fromUnits(res[2])
		if res[1] == "settings" {
			return errs.New(errs.PolicyLimit, "this app may commit at most %s USDT in one order, so it may not raise a live bot's "+
				"positionSize or leverage, nor create a bot on an exchange account: the bot's own webhook orders are sized later, "+
				"where the app's cap cannot hold them; the user changes these settings in the dashboard, or the cap in Connected apps", limit).
				WithDetails(map[string]any{"limit": LimitOrderNotional, "value": limit.String(), "used": "settings", "resetsAt": nil})
		}
		return errs.New(errs.PolicyLimit, "this order commits %s USDT and this app may commit at most %s USDT in one order "+
			"(exits are never refused); the user changes the limit in the dashboard's Connected apps", c.Notional, limit).
			WithDetails(map[string]any{"limit": LimitOrderNotional, "value": limit.String(), "used": c.Notional.String(),
				"requested": c.Notional.String(), "resetsAt": nil})
	case LimitDayNotional:
		used, _ := fromUnits(res[1])
		limit, _ := fromUnits(res[2])
		return errs.New(errs.PolicyLimit, "this app committed %s USDT today of its %s USDT a day, and this order's %s USDT would pass it; "+
			"the day resets at %s (exits are never refused)", used, limit, c.Notional, tomorrow.Format(time.RFC3339)).
			WithDetails(map[string]any{"limit": LimitDayNotional, "value": limit.String(), "used": used.String(),
				"requested": c.Notional.String(), "resetsAt": tomorrow.Format(time.RFC3339)})
	}
	return fmt.Errorf("apppolicy: unknown limit %q", res[0])
}

// ApprovalNeeded is Admit's answer for a live entry the app's policy holds for the user's
// approval: every limit passed, nothing was counted; the call is to be stored as awaiting
// approval (runtime/approval) and admitted again, Approved, when the user approves it.
type ApprovalNeeded struct {
	// Above is the policy's threshold (zero: every live entry); Notional the call's.
	Above, Notional decimal.Decimal
}

func (a *ApprovalNeeded) Error() string { return "held for the user's approval: " + a.Reason() }

// Reason is the rule that asked for the approval, in words.
func (a *ApprovalNeeded) Reason() string {
	if a.Above.IsZero() {
		return "the app's policy asks the user to approve every live entry"
	}
	return "the app's policy asks the user to approve live entries above " + a.Above.String() + " USDT"
}

// nextUTCDay is the start of the UTC day after now's.
func nextUTCDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// DayCommitted is the notional, in USDT, user's app clientID committed in the current UTC
// day.
func (ps *Policies) DayCommitted(ctx context.Context, userID, clientID string) (decimal.Decimal, error) {
	s, err := ps.rdb.Get(ctx, store.UserAppNotional(userID, clientID, ps.now().UTC().Format("20060102"))).Result()
	if errors.Is(err, redis.Nil) {
		return decimal.Zero, nil
	}
	if err != nil {
		return decimal.Zero, err
	}
	d, _ := fromUnits(s)
	return d, nil
}

// HourUsed is the orders user's app clientID placed in the current UTC hour.
func (ps *Policies) HourUsed(ctx context.Context, userID, clientID string) (int, error) {
	hour := ps.now().UTC().Truncate(time.Hour)
	n, err := ps.rdb.Get(ctx, store.UserAppOrders(userID, clientID, hour.Format("2006010215"))).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Chosen reports whether p names bot id among the bots the app may act on (false for every
// bot when p allows all).
func (p Policy) Chosen(id string) bool { return slices.Contains(p.Bots, id) }
