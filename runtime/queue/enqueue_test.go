package queue

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/store/storetest"
)

// An envelope whose signal ID is not placed for its bot (an older version's, a test's) is
// queued all the same, and logged.
func TestEnqueueQueuesAnUnplacedIDAndLogsIt(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	unplaced.Store(0) // the first is logged: earlier tests' do not count
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(prev)
	bot := "bot-u"
	other := "sig-u"
	for i := 0; InBotPartition(bot, other); i++ {
		other = fmt.Sprintf("sig-u%d", i)
	}
	placed := NewSignalID(bot)
	for _, id := range []string{placed, other} {
		if _, err := Enqueue(ctx, rdb, Envelope{SignalID: id, BotID: bot, Priority: PriorityWebhook}); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
	}
	if n := rdb.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val(); n != 2 {
		t.Fatalf("%d queued, want 2", n)
	}
	if out := logs.String(); strings.Contains(out, placed) || !strings.Contains(out, "signalId="+other) {
		t.Fatalf("log %q: want the unplaced ID, not the placed one", out)
	}
}
