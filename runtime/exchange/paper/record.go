package paper

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Paper balances in PostgreSQL. A paper account's money (its balance, the margin its
// futures reserve, each bot's holdings and futures positions, its last refill) changes only
// in the fill script and in a refill, and with a database each change raises the account's
// change number (field seq) and appends the new values to the account's archive stream
// (store.PaperArchive) in the same script or transaction. The archiver copies them to the
// tables paper_accounts and paper_holdings (QueueChange), each row replaced only by a later
// change number, and trims the stream.
//
// After a lost Redis the account's hash comes back from the PaperAccount controller with its
// initial balance. It carries no restored field then, and a recorded fill refuses to write
// until Records.Account has put the recorded balance, margin and holdings back (and set the
// field): so no fill is ever computed from the initial balance of an account that had
// traded. The executor restores the accounts of a partition it restores (bookstate) and any
// account a fill finds unrestored.

const (
	// fieldSeq is the account's change number; fieldRestored marks a hash that holds the
	// recorded state (or had nothing to restore).
	fieldSeq      = "seq"
	fieldRestored = "restored"
)

// archiveLua is the append of a change to the account's archive stream KEYS[key], its
// values as Lua expressions: balance, margin, holdings field and value, last refill (ms;
// an empty string for none), change number, and for a fill its client order ID and order
// (none for other changes).
func archiveLua(key int, balance, margin, field, holding, refill, n string, order ...string) string {
	s := "  redis.call('XADD', KEYS[" + strconv.Itoa(key) + "], '*', 'k', '" + store.ArchivePaper + "', 'v', " + balance +
		", 'm', " + margin + ", 'f', " + field + ", 'h', " + holding + ", 'r', " + refill + ", 'n', " + n
	if len(order) == 2 {
		s += ", 'c', " + order[0] + ", 'o', " + order[1]
	}
	return s + ")\n"
}

// Change is one archive entry of a paper account.
type Change struct {
	Account         string
	Balance, Margin string
	// Field and Holding are the holdings field the change wrote and its value ("" when it
	// removed it); Field is "" for a refill.
	Field, Holding string
	// Refill is the refill's time (ms); "" for a fill.
	Refill string
	N      int64
	// ClientOrderID and Order are a fill's order as the paper exchange stores it; "" for
	// other changes.
	ClientOrderID, Order string
}

// ChangeOf reads an archive entry of account's stream.
func ChangeOf(account string, values map[string]any) (Change, error) {
	str := func(k string) string { s, _ := values[k].(string); return s }
	c := Change{Account: account, Balance: str("v"), Margin: str("m"), Field: str("f"), Holding: str("h"), Refill: str("r"),
		ClientOrderID: str("c"), Order: str("o")}
	n, err := strconv.ParseInt(str("n"), 10, 64)
	if err != nil || c.Balance == "" || c.Margin == "" {
		return Change{}, fmt.Errorf("paper account %s: a change without its number or balance", account)
	}
	c.N = n
	return c, nil
}

// QueueChange adds the rows of c to b: the account's balance and margin, its last refill,
// the holding it wrote, each unless a later change is recorded, and a fill's order (never
// replaced: an order is stored once under its client order ID).
func QueueChange(b *pgx.Batch, c Change) {
	if c.ClientOrderID != "" && c.Order != "" {
		b.Queue(`INSERT INTO paper_orders (account_id, client_order_id, value) VALUES ($1, $2, $3)
			ON CONFLICT (account_id, client_order_id) DO NOTHING`, c.Account, c.ClientOrderID, c.Order)
	}
	var refill *int64
	if ms, err := strconv.ParseInt(c.Refill, 10, 64); err == nil {
		refill = &ms
	}
	b.Queue(`INSERT INTO paper_accounts (account_id, part, balance, margin, last_refill_ms, seq)
		VALUES ($1, $2, $3::numeric, $4::numeric, $5, $6)
		ON CONFLICT (account_id) DO UPDATE SET balance = EXCLUDED.balance, margin = EXCLUDED.margin,
		last_refill_ms = coalesce(EXCLUDED.last_refill_ms, paper_accounts.last_refill_ms), seq = EXCLUDED.seq
		WHERE paper_accounts.seq < EXCLUDED.seq`, c.Account, store.PartitionOf(c.Account), c.Balance, c.Margin, refill, c.N)
	if c.Field == "" {
		return
	}
	var value *string
	if c.Holding != "" {
		value = &c.Holding
	}
	b.Queue(`INSERT INTO paper_holdings (account_id, field, value, seq) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, field) DO UPDATE SET value = EXCLUDED.value, seq = EXCLUDED.seq
		WHERE paper_holdings.seq < EXCLUDED.seq`, c.Account, c.Field, value, c.N)
}

// QueueForget adds to b the removal of a deleted account's rows.
func QueueForget(b *pgx.Batch, account string) {
	b.Queue(`DELETE FROM paper_orders WHERE account_id = $1`, account)
	b.Queue(`DELETE FROM paper_holdings WHERE account_id = $1`, account)
	b.Queue(`DELETE FROM paper_accounts WHERE account_id = $1`, account)
}

// restoreScript puts an account's recorded state back: KEYS account, holdings, archive
// stream; ARGV change number, balance, margin, last refill ("" none), "1" to record what
// Redis holds when there is no record (an account that traded before the database), then
// holdings field/value pairs. Only into an account's hash that exists (the controller
// writes its settings) and is not restored yet, and only over a state older than the
// record's (a lower change number, or none). Answers 1 when the account is restored now or
// was, 0 when its hash is not there yet.
var restoreScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], '` + fieldRestored + `') == 1 then return 1 end
if tonumber(ARGV[1]) > tonumber(redis.call('HGET', KEYS[1], '` + fieldSeq + `') or '0') then
  redis.call('HSET', KEYS[1], '` + fieldBalance + `', ARGV[2], '` + fieldMargin + `', ARGV[3], '` + fieldSeq + `', ARGV[1])
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], '` + fieldLastRefillAt + `', ARGV[4]) end
  redis.call('DEL', KEYS[2])
  if #ARGV > 5 then redis.call('HSET', KEYS[2], unpack(ARGV, 6)) end
elseif ARGV[5] == '1' then
  local a = redis.call('HMGET', KEYS[1], '` + fieldBalance + `', '` + fieldMargin + `', '` + fieldLastRefillAt + `')
  local bal, mar = a[1] or '0', a[2] or '0'
  local n = redis.call('HINCRBY', KEYS[1], '` + fieldSeq + `', 1)
` + archiveLua(3, "bal", "mar", "''", "''", "a[3] or ''", "n") + `  local pos = redis.call('HGETALL', KEYS[2])
  for i = 1, #pos, 2 do
    n = redis.call('HINCRBY', KEYS[1], '` + fieldSeq + `', 1)
` + archiveLua(3, "bal", "mar", "pos[i]", "pos[i+1]", "''", "n") + `  end
end
redis.call('HSET', KEYS[1], '` + fieldRestored + `', '1')
return 1
`)

// Records restores paper accounts from PostgreSQL.
type Records struct {
	rdb redis.UniversalClient
	db  *pgxpool.Pool
}

// NewRecords returns the accounts' records in db (nil: none; Account then only marks).
func NewRecords(rdb redis.UniversalClient, db *pgxpool.Pool) *Records {
	return &Records{rdb: rdb, db: db}
}

// ErrNotProjected: the account's hash is not in Redis (the controller has not written it
// again yet); its restore waits for it.
var ErrNotProjected = errors.New("paper account not projected yet")

// Account restores account id unless it is restored.
func (r *Records) Account(ctx context.Context, id string) error {
	args := []any{int64(0), "", "", "", flag(r.db != nil)}
	if r.db != nil {
		var balance, margin string
		var refill *int64
		var n int64
		err := r.db.QueryRow(ctx, `SELECT balance::text, margin::text, last_refill_ms, seq FROM paper_accounts WHERE account_id = $1`,
			id).Scan(&balance, &margin, &refill, &n)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			args = []any{n, balance, margin, "", "0"}
			if refill != nil {
				args[3] = strconv.FormatInt(*refill, 10)
			}
			rows, err := r.db.Query(ctx, `SELECT field, value FROM paper_holdings WHERE account_id = $1 AND value IS NOT NULL`, id)
			if err != nil {
				return err
			}
			for rows.Next() {
				var f, v string
				if err := rows.Scan(&f, &v); err != nil {
					rows.Close()
					return err
				}
				args = append(args, f, v)
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	ok, err := restoreScript.Run(ctx, r.rdb, []string{store.PaperAccount(id), store.PaperPositions(id), store.PaperArchive(id)},
		args...).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return ErrNotProjected
	}
	return nil
}

// Partition lists the recorded accounts of partition part (store.PartitionOf of the
// account ID), for their restore.
func (r *Records) Partition(ctx context.Context, part int) ([]string, error) {
	if r.db == nil {
		return nil, nil
	}
	rows, err := r.db.Query(ctx, `SELECT account_id FROM paper_accounts WHERE part = $1`, part)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// refillScript writes a refill (KEYS account, archive stream; ARGV the new balance, the
// refill's time in ms) and, on a recorded account (one restored or marked by
// Records.Account), raises its change number and appends the change.
var refillScript = redis.NewScript(`
redis.call('HSET', KEYS[1], '` + fieldBalance + `', ARGV[1], '` + fieldLastRefillAt + `', ARGV[2])
if redis.call('HEXISTS', KEYS[1], '` + fieldRestored + `') == 1 then
  local n = redis.call('HINCRBY', KEYS[1], '` + fieldSeq + `', 1)
` + archiveLua(2, "ARGV[1]", "redis.call('HGET', KEYS[1], '"+fieldMargin+"') or '0'", "''", "''", "ARGV[2]", "n") + `end
return 1
`)

// Order is the order stored under client order ID cid of account id in PostgreSQL (as the
// paper exchange stores it), or in the account's archive stream while it waits to be
// copied there (PostgreSQL down longer than the order's life in Redis), and whether there
// is one.
func (r *Records) Order(ctx context.Context, id, cid string) (string, bool, error) {
	if r.db == nil {
		return "", false, nil
	}
	var v string
	err := r.db.QueryRow(ctx, `SELECT value FROM paper_orders WHERE account_id = $1 AND client_order_id = $2`, id, cid).Scan(&v)
	if err == nil {
		return v, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("paper account %s: looking order %s up in PostgreSQL: %w", id, cid, err)
	}
	m, ok, err := store.FindInStream(ctx, r.rdb, store.PaperArchive(id), func(m redis.XMessage) bool {
		c, _ := m.Values["c"].(string)
		return c == cid
	})
	if err != nil || !ok {
		return "", false, err
	}
	o, _ := m.Values["o"].(string)
	return o, o != "", nil
}

type recallKey struct{}

// Recall marks ctx for a signal older than the paper orders' life in Redis (OrderTTL): an
// order its earlier attempt placed may be gone from Redis, so the exchange of a recorded
// account looks a client order ID up in PostgreSQL too before it places anything under it
// (and answers the stored order, as it would from Redis), and fails rather than fill while
// PostgreSQL cannot answer. A fill is never made twice, however late its retry.
func Recall(ctx context.Context) context.Context { return context.WithValue(ctx, recallKey{}, true) }

func recalled(ctx context.Context) bool { b, _ := ctx.Value(recallKey{}).(bool); return b }
