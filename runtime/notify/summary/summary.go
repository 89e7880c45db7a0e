// Package summary sends the daily summaries: each minute it finds the users whose chosen
// summary hour (notify.Prefs.SummaryHour, in their time zone) it is, and tells each their
// bots' day (a DailySummary fact, notify.Tell), which then travels as every other event.
// Its ID names the user and their local date, so the hour's sixty ticks (and two notifyd
// replicas after a failover) queue it once.
package summary

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/notify"
)

// Summarize is a user's DailySummary event as of now (chatbot.Runtime.Summary).
type Summarize func(ctx context.Context, user string) (notify.Event, error)

// Scheduler tells the summaries that are due. It is one goroutine's.
type Scheduler struct {
	DB        *pgxpool.Pool
	Redis     redis.Cmdable
	Summarize Summarize
	Now       func() time.Time

	// told are the summaries this process told ("user date"), so that the hour's later
	// ticks skip them; a restarted or another notifyd tells one again, and the outbox
	// queues it once (same ID).
	told map[string]bool
}

// Step tells every user whose summary hour it is now their summary; it returns how many.
func (s *Scheduler) Step(ctx context.Context) (int, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	rows, err := s.DB.Query(ctx, `SELECT user_id, prefs FROM notify_prefs WHERE prefs ? 'summaryHour'`)
	if err != nil {
		return 0, err
	}
	type due struct {
		user, date string
	}
	var todo []due
	for rows.Next() {
		var user string
		var raw []byte
		if err := rows.Scan(&user, &raw); err != nil {
			rows.Close()
			return 0, err
		}
		var p notify.Prefs
		if json.Unmarshal(raw, &p) != nil || p.SummaryHour == nil {
			continue
		}
		loc, err := time.LoadLocation(p.Zone)
		if err != nil {
			loc = time.UTC
		}
		if local := now.In(loc); local.Hour() == *p.SummaryHour {
			todo = append(todo, due{user, local.Format(time.DateOnly)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if s.told == nil {
		s.told = map[string]bool{}
	}
	n := 0
	for _, d := range todo {
		if s.told[d.user+" "+d.date] {
			continue
		}
		e, err := s.Summarize(ctx, d.user)
		if err != nil {
			return n, err
		}
		e.ID, e.Kind, e.At, e.User = "daily_summary:"+d.user+":"+d.date, notify.DailySummary, now, d.user
		if err := notify.Tell(ctx, s.Redis, e); err != nil {
			return n, err
		}
		s.told[d.user+" "+d.date] = true
		n++
	}
	if len(s.told) > 100000 { // a day's worth of users at most matters
		s.told = nil
	}
	return n, nil
}
