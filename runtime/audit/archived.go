package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// Archived is an entry as the archive stream carries it to PostgreSQL (runtime/archive
// decodes it): the entry with its ID in the user's stream.
type Archived struct {
	ID         string `json:"id"`
	UserID     string `json:"user"`
	ClientID   string `json:"client"`
	ClientName string `json:"clientName"`
	Channel    string `json:"channel"`
	Tool       string `json:"tool"`
	// Arguments are the stored (redacted, capped) arguments, as text: a capped value is
	// not JSON.
	Arguments string    `json:"args"`
	OK        bool      `json:"ok"`
	Code      string    `json:"code"`
	Message   string    `json:"message"`
	Time      time.Time `json:"at"`
}

// IDParts is an entry ID's milliseconds and sequence number.
func (a Archived) IDParts() (ms, seq int64, ok bool) {
	return store.SplitStreamID(a.ID)
}

// archive appends e (recorded, with its ID) to the archive stream of its user's partition.
// It follows the user's own stream in a second command (the two keys are in different
// slots): an entry whose append failed is in Redis only, and Record reports the failure.
func archive(ctx context.Context, rdb redis.UniversalClient, e Entry) error {
	v, err := json.Marshal(Archived{ID: e.ID, UserID: e.UserID, ClientID: e.ClientID, ClientName: e.ClientName,
		Channel: e.Channel, Tool: e.Tool, Arguments: string(e.Arguments), OK: e.Outcome.OK, Code: string(e.Outcome.Code),
		Message: e.Outcome.Message, Time: e.Time})
	if err != nil {
		return err
	}
	return rdb.XAdd(ctx, &redis.XAddArgs{Stream: store.Archive(store.PartitionOf(e.UserID)),
		Values: []any{"k", store.ArchiveAudit, "v", string(v)}}).Err()
}

// archived is up to limit of the user's entries in PostgreSQL, newest first, before cursor
// ("" from the newest) and not older than cutoffMs. PostgreSQL not answering gives none:
// the page is then Redis's alone, which holds every entry of the retention unless Redis
// was lost.
func (j *Journal) archived(ctx context.Context, userID, cursor string, cutoffMs int64, limit int) []Entry {
	beforeMs, beforeSeq := int64(1<<63-1), int64(1<<63-1)
	if cursor != "" {
		beforeMs, beforeSeq, _ = store.SplitStreamID(cursor)
	}
	rows, err := j.db.Query(ctx, `SELECT ms, seq, at, client_id, client_name, channel, tool, arguments, ok, code, message
		FROM audit_log WHERE user_id = $1 AND (ms, seq) < ($2, $3) AND ms >= $4 ORDER BY ms DESC, seq DESC LIMIT $5`,
		userID, beforeMs, beforeSeq, cutoffMs, limit)
	if err != nil {
		return nil
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
		var e Entry
		var ms, seq int64
		var args, code string
		err := row.Scan(&ms, &seq, &e.Time, &e.ClientID, &e.ClientName, &e.Channel, &e.Tool, &args, &e.Outcome.OK,
			&code, &e.Outcome.Message)
		e.ID, e.UserID, e.Arguments = strconv.FormatInt(ms, 10)+"-"+strconv.FormatInt(seq, 10), userID, json.RawMessage(args)
		e.Outcome.Code, e.Time = errs.Code(code), e.Time.UTC()
		return e, err
	})
	if err != nil {
		return nil
	}
	return out
}

// merge is the union of two pages newest first, each entry once: an entry of the merged
// page cut to a limit is among that many first entries of the side it came from, so pages
// cut this way follow each other without a gap or a repeat.
func merge(a, b []Entry) []Entry {
	out := append(slices.Clip(a), b...)
	slices.SortFunc(out, func(x, y Entry) int { return compareIDs(y.ID, x.ID) })
	return slices.CompactFunc(out, func(x, y Entry) bool { return x.ID == y.ID })
}

func compareIDs(x, y string) int {
	xm, xs, _ := store.SplitStreamID(x)
	ym, ys, _ := store.SplitStreamID(y)
	if xm != ym {
		return cmp.Compare(xm, ym)
	}
	return cmp.Compare(xs, ys)
}
