package apppolicy

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// With PostgreSQL (Options.DB), the policies and the kill switch are recorded there
// (tables app_policies and app_suspensions) and Redis holds the copy that the admission
// script reads on every app call. A guardrail must not lapse with Redis, so:
//
//   - a policy change is written to PostgreSQL first, with a version the database raises,
//     then to Redis with that version (putScript); a change PostgreSQL refused is made
//     nowhere (503). A lift of the kill switch too;
//   - a suspension is made in Redis first (it must stop the apps whether or not PostgreSQL
//     answers) and recorded after; a failed record answers 503 with the switch already on,
//     and a second suspension records it;
//   - a user's copy in Redis carries a marker (store.UserAppsCached). The admission refuses
//     to decide while it is absent (a flushed or new Redis): it copies the user's policies
//     and switch back first, in one MULTI with the marker, and decides then. While
//     PostgreSQL is down too, an app call of that user answers 503 and nothing is admitted:
//     a switch that was on never reads as off.

// cachedValue is the marker's value.
const cachedValue = "1"

// fieldVersion is the version of the record a policy hash copies (absent: written without
// PostgreSQL, or before it held policies).
const fieldVersion = "v"

// putScript writes a policy hash (KEYS[1]) from its fields (ARGV[2] on) unless Redis holds
// a copy of a version at least as new as ARGV[1] (0: no record, always written). Returns 1
// when written.
var putScript = redis.NewScript(`
local v = tonumber(ARGV[1])
if v > 0 and tonumber(redis.call('HGET', KEYS[1], '` + fieldVersion + `') or '0') >= v then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if v > 0 then redis.call('HSET', KEYS[1], '` + fieldVersion + `', ARGV[1]) end
return 1
`)

// unavailable is the answer when PostgreSQL cannot record or give back a change.
func unavailable(err error) error {
	return errs.RecordUnavailable(err, "the connected apps' permissions cannot be read or changed for a moment; nothing was changed: try again")
}

// record is PostgreSQL's side.
type record struct{ db *pgxpool.Pool }

// insertPolicy writes a policy at version 1; the statements below add what happens when
// the user and app have a row already.
const insertPolicy = `INSERT INTO app_policies (user_id, client_id, live, bots, orders_per_hour, order_notional,
	day_notional, approve, approve_above, version, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10)`

// put records p and returns its new version.
func (r record) put(ctx context.Context, userID, clientID string, p Policy, now time.Time) (int64, error) {
	v, err := r.write(ctx, insertPolicy+` ON CONFLICT (user_id, client_id) DO UPDATE SET live = EXCLUDED.live,
		bots = EXCLUDED.bots, orders_per_hour = EXCLUDED.orders_per_hour, order_notional = EXCLUDED.order_notional,
		day_notional = EXCLUDED.day_notional, approve = EXCLUDED.approve, approve_above = EXCLUDED.approve_above,
		version = app_policies.version + 1, updated_at = EXCLUDED.updated_at RETURNING version`, userID, clientID, p, now)
	if err != nil {
		return 0, unavailable(err)
	}
	return v, nil
}

// adopt records p, a policy Redis held before PostgreSQL did, unless a record exists;
// returns the version to copy it back with (0: a record existed, nothing to copy).
func (r record) adopt(ctx context.Context, userID, clientID string, p Policy, now time.Time) (int64, error) {
	v, err := r.write(ctx, insertPolicy+` ON CONFLICT (user_id, client_id) DO NOTHING RETURNING version`, userID, clientID, p, now)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// write runs sql (insertPolicy and its conflict clause) for p and returns the version.
func (r record) write(ctx context.Context, sql, userID, clientID string, p Policy, now time.Time) (int64, error) {
	var v int64
	err := r.db.QueryRow(ctx, sql, userID, clientID, p.Live, botsOrEmpty(p.Bots), p.OrdersPerHour, p.OrderNotional,
		p.DayNotional, p.Approve, p.ApproveAbove, now).Scan(&v)
	return v, err
}

func (r record) suspend(ctx context.Context, userID string, since time.Time) error {
	if _, err := r.db.Exec(ctx, `INSERT INTO app_suspensions (user_id, since) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING`,
		userID, since); err != nil {
		return errs.RecordUnavailable(err, "the kill switch is on, but it cannot be recorded for a moment: suspend again to record it")
	}
	return nil
}

func (r record) lift(ctx context.Context, userID string) error {
	if _, err := r.db.Exec(ctx, `DELETE FROM app_suspensions WHERE user_id = $1`, userID); err != nil {
		return unavailable(err)
	}
	return nil
}

// recorded is a policy as recorded, with its version.
type recorded struct {
	clientID string
	policy   Policy
	version  int64
}

// load reads user's policies and since when their switch is on (nil: off).
func (r record) load(ctx context.Context, userID string) ([]recorded, *time.Time, error) {
	rows, err := r.db.Query(ctx, `SELECT client_id, live, bots, orders_per_hour, order_notional, day_notional, approve,
		approve_above, version FROM app_policies WHERE user_id = $1`, userID)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	var out []recorded
	for rows.Next() {
		var c recorded
		p := &c.policy
		if err := rows.Scan(&c.clientID, &p.Live, &p.Bots, &p.OrdersPerHour, &p.OrderNotional, &p.DayNotional, &p.Approve,
			&p.ApproveAbove, &c.version); err != nil {
			rows.Close()
			return nil, nil, unavailable(err)
		}
		if len(p.Bots) == 0 {
			p.Bots = nil
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, unavailable(err)
	}
	var since time.Time
	err = r.db.QueryRow(ctx, `SELECT since FROM app_suspensions WHERE user_id = $1`, userID).Scan(&since)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return out, nil, nil
	case err != nil:
		return nil, nil, unavailable(err)
	}
	return out, &since, nil
}

// botsOrEmpty is bots as the record keeps them: an empty array for every bot (NOT NULL).
func botsOrEmpty(bots []string) []string {
	if bots == nil {
		return []string{}
	}
	return bots
}

// cached makes sure Redis holds user's policies and switch as recorded (nothing without
// PostgreSQL): one EXISTS when it does, a copy back (recall) when it does not.
func (ps *Policies) cached(ctx context.Context, userID string) error {
	if ps.record == nil {
		return nil
	}
	n, err := ps.rdb.Exists(ctx, store.UserAppsCached(userID)).Result()
	if err != nil || n == 1 {
		return err
	}
	return ps.recall(ctx, userID)
}

// recall copies user's policies and switch from PostgreSQL to Redis, with the marker, in
// one MULTI (all in the user's slot). A policy Redis holds at a newer version (changed
// since the read) is kept, and a switch that is on in Redis stays on: a suspension is made
// in Redis first, and the recall must never lift one that PostgreSQL has not recorded yet.
func (ps *Policies) recall(ctx context.Context, userID string) error {
	pols, since, err := ps.record.load(ctx, userID)
	if err != nil {
		return err
	}
	_, err = ps.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range pols {
			putScript.Eval(ctx, p, []string{store.UserAppPolicy(userID, c.clientID)}, append([]any{c.version}, fieldsOf(c.policy)...)...)
		}
		if since != nil {
			p.SetNX(ctx, store.UserAppsSuspended(userID), since.UnixMilli(), 0)
		}
		p.Set(ctx, store.UserAppsCached(userID), cachedValue, 0)
		return nil
	})
	return err
}

// Adopt records the policies of user's apps clientIDs and the switch that Redis holds
// without a record (set before PostgreSQL held them; an upgrade), never over a record, and
// returns how many it recorded. authd runs it at start for every user.
func (ps *Policies) Adopt(ctx context.Context, userID string, clientIDs []string) (int, error) {
	if ps.record == nil {
		return 0, nil
	}
	n := 0
	now := ps.now().UTC()
	for _, client := range clientIDs {
		key := store.UserAppPolicy(userID, client)
		m, err := ps.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return n, err
		}
		if len(m) == 0 || m[fieldVersion] != "" {
			continue
		}
		p := policyOf(m)
		v, err := ps.record.adopt(ctx, userID, client, p, now)
		if err != nil {
			return n, err
		}
		if v > 0 {
			n++
			if err := putScript.Run(ctx, ps.rdb, []string{key}, append([]any{v}, fieldsOf(p)...)...).Err(); err != nil {
				return n, err
			}
		}
	}
	v, err := ps.rdb.Get(ctx, store.UserAppsSuspended(userID)).Result()
	if errors.Is(err, redis.Nil) {
		return n, nil
	}
	if err != nil {
		return n, err
	}
	since := sinceOf(v)
	if since.IsZero() {
		since = now
	}
	return n, ps.record.suspend(ctx, userID, since)
}

// fieldsOf is p as its Redis hash holds it (field, value, ...), without the version.
func fieldsOf(p Policy) []any {
	return []any{"live", flag(p.Live), "bots", botList(p.Bots), "ordersPerHour", strconv.Itoa(p.OrdersPerHour),
		"orderNotional", units(p.OrderNotional.Decimal), "dayNotional", units(p.DayNotional.Decimal), "approve", flag(p.Approve),
		"approveAbove", units(p.ApproveAbove.Decimal)}
}
