package apppolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// Limits a POLICY_LIMIT names in details.limit, besides LimitKillSwitch.
const (
	LimitBots          = "bots"
	LimitVenue         = "venue"
	LimitOrdersPerHour = "ordersPerHour"
)

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
}

// DefaultPolicy is the policy of an app the person set none for: every bot, the venue its
// scope allows (the consent to mcp:live is the choice of live), DefaultOrdersPerHour.
func DefaultPolicy() Policy { return Policy{Live: true, OrdersPerHour: DefaultOrdersPerHour} }

// Validate refuses a policy no limit can be read from.
func (p Policy) Validate() error {
	if p.OrdersPerHour < 1 || p.OrdersPerHour > MaxOrdersPerHour {
		return errs.New(errs.InvalidParameter, "orders per hour must be a whole number from 1 to %d", MaxOrdersPerHour).
			WithDetails(map[string]any{"parameter": "ordersPerHour"})
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
}

// NewPolicies returns the policies on rdb; now is their clock (nil: time.Now).
func NewPolicies(rdb redis.UniversalClient, now func() time.Time) *Policies {
	if now == nil {
		now = time.Now
	}
	return &Policies{rdb: rdb, now: now}
}

// Get is the policy of user's app clientID (DefaultPolicy when none is stored).
func (ps *Policies) Get(ctx context.Context, userID, clientID string) (Policy, error) {
	m, err := ps.rdb.HGetAll(ctx, store.UserAppPolicy(userID, clientID)).Result()
	if err != nil {
		return Policy{}, err
	}
	return policyOf(m), nil
}

// Set stores p as the policy of user's app clientID.
func (ps *Policies) Set(ctx context.Context, userID, clientID string, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	live := "0"
	if p.Live {
		live = "1"
	}
	return ps.rdb.HSet(ctx, store.UserAppPolicy(userID, clientID), "live", live, "bots", botList(p.Bots),
		"ordersPerHour", strconv.Itoa(p.OrdersPerHour)).Err()
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
	return p
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
}

// admitScript admits one call of an app, in one round trip, atomically: the kill switch,
// then the policy's bots and venue, then the hourly order count, which is incremented only
// when the call is admitted (so no two concurrent calls both take the last order).
//
//	KEYS[1] the user's kill switch, KEYS[2] the app's policy hash, KEYS[3] the app's order
//	count of this UTC hour (all in the user's slot)
//	ARGV: botId, createsBot, live, order, exit, default orders per hour, ms to the hour's
//	end (relative: the count must not depend on Redis's clock agreeing with ours)
//
// Returns {limit, a, b}: limit "" when admitted (a = orders used, b = cap, for an order);
// otherwise the limit that refused, with a and b what it reports.
var admitScript = redis.NewScript(`
local since = redis.call('GET', KEYS[1])
if since then return {'killSwitch', since, ''} end
local p = redis.call('HMGET', KEYS[2], 'live', 'bots', 'ordersPerHour')
local bots = p[2] or ''
if bots ~= '' then
  if ARGV[2] == '1' then return {'bots', bots, ''} end
  if ARGV[1] ~= '' and not string.find(bots, ',' .. ARGV[1] .. ',', 1, true) then return {'bots', bots, ''} end
end
if ARGV[3] == '1' and p[1] == '0' then return {'venue', 'paper', ''} end
if ARGV[4] ~= '1' then return {'', '', ''} end
local cap = tonumber(p[3] or ARGV[6]) or tonumber(ARGV[6])
local used = tonumber(redis.call('GET', KEYS[3]) or '0')
if ARGV[5] ~= '1' and used >= cap then return {'ordersPerHour', tostring(used), tostring(cap)} end
used = redis.call('INCR', KEYS[3])
redis.call('PEXPIRE', KEYS[3], ARGV[7])
return {'', tostring(used), tostring(cap)}
`)

// Admit admits c or refuses it with POLICY_LIMIT naming the limit (or the kill switch):
// one Redis round trip.
func (ps *Policies) Admit(ctx context.Context, c Call) error {
	now := ps.now().UTC()
	hour := now.Truncate(time.Hour)
	next := hour.Add(time.Hour)
	keys := []string{store.UserAppsSuspended(c.UserID), store.UserAppPolicy(c.UserID, c.ClientID),
		store.UserAppOrders(c.UserID, c.ClientID, hour.Format("2006010215"))}
	res, err := admitScript.Run(ctx, ps.rdb, keys, c.BotID, flag(c.CreatesBot), flag(c.Live), flag(c.Order), flag(c.Exit),
		DefaultOrdersPerHour, max(next.Sub(now).Milliseconds(), 1)).StringSlice()
	if err != nil {
		return err
	}
	if len(res) != 3 {
		return fmt.Errorf("apppolicy: admission answered %v", res)
	}
	switch res[0] {
	case "":
		return nil
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
	}
	return fmt.Errorf("apppolicy: unknown limit %q", res[0])
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
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
