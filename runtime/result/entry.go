package result

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Entry is one signal of a bot's index of recent signals: what its result does not say.
type Entry struct {
	SignalID string `json:"signalId"`
	// Source is webhook, manual, strategy, copy or watcher.
	Source string `json:"source"`
	// Action is the signal's action (buy, sell, close, ...), or a manual order's type.
	Action string `json:"action,omitempty"`
	// ReceivedAt is when the intake accepted the signal, ms since epoch.
	ReceivedAt int64 `json:"receivedAt"`
}

// An index entry is stored as one string: the time the intake accepted the signal (ms,
// decimal), the source, the signal ID and the action, separated by entrySep. The action,
// which the sender wrote, is last, so that it may hold any byte; a signal ID holding the
// separator is written in the JSON form instead (no ID the intake makes does). The index
// before this form was a sorted set whose members were JSON objects ({"id", "source",
// "action"}) scored by the time: DecodeEntry reads both, and the archive stream carries
// the entry as stored.
//
// Why not JSON: a bot's index holds up to a thousand entries for the results' whole life,
// and the key names JSON repeats per entry were a third of its bytes.
const entrySep = "\x1f"

// Encode is e as an index entry.
func (e Entry) Encode() string {
	if strings.Contains(e.SignalID, entrySep) {
		b, _ := json.Marshal(jsonEntry(e))
		return string(b)
	}
	var b strings.Builder
	b.Grow(20 + len(e.Source) + len(e.SignalID) + len(e.Action) + 3)
	b.WriteString(strconv.FormatInt(e.ReceivedAt, 10))
	b.WriteString(entrySep)
	b.WriteString(e.Source)
	b.WriteString(entrySep)
	b.WriteString(e.SignalID)
	b.WriteString(entrySep)
	b.WriteString(e.Action)
	return b.String()
}

// jsonEntry is the JSON form of an entry: the old sorted set's members (no time: the score
// held it) and the entries whose signal ID holds the separator.
type jsonEntry struct {
	SignalID   string `json:"id"`
	Source     string `json:"source"`
	Action     string `json:"action,omitempty"`
	ReceivedAt int64  `json:"at,omitempty"`
}

// ErrCorruptEntry: an index entry in neither form.
var ErrCorruptEntry = errors.New("result: corrupt signal index entry")

// DecodeEntry reads an index entry in either form; score is the time when the entry carries
// none (a member of the old sorted set).
func DecodeEntry(s string, score int64) (Entry, error) {
	if strings.HasPrefix(s, "{") {
		var j jsonEntry
		if err := json.Unmarshal([]byte(s), &j); err != nil {
			return Entry{}, ErrCorruptEntry
		}
		at := j.ReceivedAt
		if at == 0 {
			at = score
		}
		return Entry{SignalID: j.SignalID, Source: j.Source, Action: j.Action, ReceivedAt: at}, nil
	}
	at, rest, ok := strings.Cut(s, entrySep)
	source, rest, ok2 := strings.Cut(rest, entrySep)
	id, action, ok3 := strings.Cut(rest, entrySep)
	ms, err := strconv.ParseInt(at, 10, 64)
	if !ok || !ok2 || !ok3 || err != nil || id == "" {
		return Entry{}, ErrCorruptEntry
	}
	return Entry{SignalID: id, Source: source, Action: action, ReceivedAt: ms}, nil
}
