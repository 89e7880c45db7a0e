package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The operator's round: list, show, retry (back in its bot's stream, result cleared), drop.
func TestDeadLetterCommands(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	env := queue.Envelope{SignalID: "sig-1", BotID: "bot-1", Priority: queue.PriorityWebhook, Source: queue.SourceWebhook,
		Signal: json.RawMessage(`{"action":"buy"}`), ReceivedAt: 1, ReplyTo: "sigops:reply:gone"}
	envJSON, _ := json.Marshal(env)
	partition := queue.PartitionOf("bot-1")
	add := func(signalID string) string {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(partition), Values: []any{
			"signalId", signalID, "botId", "bot-1", "priority", 4, "partition", queue.PartitionOf("bot-1"),
			"reason", queue.ReasonBudget, "attempts", 15, "code", "EXCHANGE_ERROR", "lastError", "exchange did not answer",
			"at", 1764000000000, "entry", "1-1", "envelope", string(envJSON)}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d-%s", partition, id) // the ID queuectl prints
	}
	first, second := add("sig-1"), add("sig-2")
	rdb.Set(ctx, store.SignalResult("sig-1"), `{"success":false}`, 0)

	run := func(cmd string, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := dead(ctx, rdb, &out, cmd, args); err != nil {
			t.Fatalf("%s %v: %v", cmd, args, err)
		}
		return out.String()
	}
	if out := run("list"); !strings.Contains(out, first) || !strings.Contains(out, "retry_budget_spent") || !strings.Contains(out, "EXCHANGE_ERROR") {
		t.Errorf("list:\n%s", out)
	}
	if out := run("list", "-after", first, "-json"); strings.Count(out, "\n") != 1 || !strings.Contains(out, `"signalId":"sig-2"`) {
		t.Errorf("list -after -json:\n%s", out)
	}
	if out := run("show", second); !strings.Contains(out, `"attempts": 15`) {
		t.Errorf("show:\n%s", out)
	}
	run("retry", first)
	msgs := rdb.XRange(ctx, queue.StreamOf("bot-1", queue.PriorityWebhook), "-", "+").Val()
	if len(msgs) != 1 {
		t.Fatalf("stream after retry: %v", msgs)
	}
	var back queue.Envelope
	_ = json.Unmarshal([]byte(msgs[0].Values[queue.EnvelopeField].(string)), &back)
	if back.SignalID != "sig-1" || back.ReplyTo != "" || back.ReceivedAt != 1 {
		t.Errorf("re-queued envelope %+v", back)
	}
	if rdb.Exists(ctx, store.SignalResult("sig-1")).Val() != 0 {
		t.Error("the failure result survived the retry: the executor would skip the signal")
	}
	run("drop", second)
	if n := rdb.XLen(ctx, store.QueueDeadLetters(partition)).Val(); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
	if err := dead(ctx, rdb, &bytes.Buffer{}, "drop", []string{second}); err == nil {
		t.Error("dropping a missing dead letter succeeded")
	}
}

// migrate-keys: a dry run reports and changes nothing, the run renames.
func TestMigrateKeysCommand(t *testing.T) {
	_, rdb := storetest.NewServer(t) // the migration is for the single server of the old layout
	ctx := context.Background()
	rdb.HSet(ctx, "sigops:risk:bot-1", "consecutiveErrors", "2")
	var out bytes.Buffer
	if err := migrateKeys(ctx, rdb, &out, "migrate-keys", []string{"-dry-run"}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "dry run") || !regexp.MustCompile(`risk counters\s+moved\s+1`).MatchString(s) {
		t.Errorf("dry run printed:\n%s", s)
	}
	if rdb.Exists(ctx, store.RiskCounters("bot-1")).Val() != 0 {
		t.Fatal("the dry run renamed")
	}
	out.Reset()
	if err := migrateKeys(ctx, rdb, &out, "migrate-keys", nil); err != nil {
		t.Fatal(err)
	}
	if rdb.HGet(ctx, store.RiskCounters("bot-1"), "consecutiveErrors").Val() != "2" {
		t.Fatalf("not renamed; printed:\n%s", out.String())
	}
}
