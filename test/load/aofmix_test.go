package load_test

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// aofMix is what an append-only file's commands cost, in bytes of the file, by command
// and by key family (the key with its variable parts as *).
type aofMix struct {
	total            int64
	byCommand, byKey map[string]int64
}

// readAOFMix reads every incremental append-only file in dir (Redis 7's appendonlydir:
// what was written since the last rewrite).
func readAOFMix(dir string) (aofMix, error) {
	m := aofMix{byCommand: map[string]int64{}, byKey: map[string]int64{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.incr.aof"))
	if err != nil || len(files) == 0 {
		return m, fmt.Errorf("no incremental append-only file in %s (%v)", dir, err)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return m, err
		}
		err = m.add(bufio.NewReaderSize(fh, 1<<20))
		_ = fh.Close()
		if err != nil {
			return m, fmt.Errorf("%s: %w", f, err)
		}
	}
	return m, nil
}

// add reads RESP arrays of bulk strings (the append-only format) until the end.
func (m *aofMix) add(r *bufio.Reader) error {
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) && line == "" {
			return nil
		}
		if err != nil || !strings.HasPrefix(line, "*") {
			return fmt.Errorf("want an array, got %q: %v", line, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return err
		}
		size := int64(len(line))
		var args []string
		for range n {
			head, err := r.ReadString('\n')
			if err != nil || !strings.HasPrefix(head, "$") {
				return fmt.Errorf("want a bulk string, got %q: %v", head, err)
			}
			l, err := strconv.Atoi(strings.TrimSpace(head[1:]))
			if err != nil {
				return err
			}
			buf := make([]byte, l+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			size += int64(len(head) + len(buf))
			if len(args) < 2 {
				args = append(args, string(buf[:l]))
			}
		}
		m.total += size
		if len(args) > 0 {
			m.byCommand[strings.ToLower(args[0])] += size
		}
		if len(args) > 1 {
			m.byKey[keyFamily(args[1])] += size
		}
	}
}

// keyFamily keeps a key's fixed words (lower-case letters and dashes) and writes every
// other part (hash tags, IDs, symbols) as *.
func keyFamily(key string) string {
	parts := strings.Split(key, ":")
	for i, p := range parts {
		if p == "" || strings.Trim(p, "abcdefghijklmnopqrstuvwxyz-") != "" {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ":")
}

// top is the n largest entries of counts as "name share%", largest first.
func top(counts map[string]int64, total int64, n int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range counts {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.k, b.k)) })
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%s %.1f%%", e.k, 100*float64(e.v)/float64(max(total, 1))))
	}
	return strings.Join(out, ", ")
}

// TestAOFMix reads a hand-written append-only file: SET is 3 lines of 4 and 2 bulk
// strings, HSET with a hash-tagged key.
func TestAOFMix(t *testing.T) {
	set := "*3\r\n$3\r\nSET\r\n$14\r\nsigops:result:7\r\n$1\r\nx\r\n"
	hset := "*4\r\n$4\r\nHSET\r\n$25\r\nsigops:book:{3}:bot-1:pos\r\n$1\r\nf\r\n$2\r\nvv\r\n"
	var m aofMix
	m.byCommand, m.byKey = map[string]int64{}, map[string]int64{}
	if err := m.add(bufio.NewReader(strings.NewReader(set + hset + set))); err == nil {
		t.Fatal("a key length that does not match its bytes was read without an error")
	}
	set = "*3\r\n$3\r\nSET\r\n$15\r\nsigops:result:7\r\n$1\r\nx\r\n"
	m.total, m.byCommand, m.byKey = 0, map[string]int64{}, map[string]int64{}
	if err := m.add(bufio.NewReader(strings.NewReader(set + hset + set))); err != nil {
		t.Fatal(err)
	}
	// SET: "*3\r\n" 4 + "$3\r\nSET\r\n" 9 + "$15\r\n" 5 + 17 + "$1\r\nx\r\n" 7 = 42 bytes.
	// HSET: 4 + "$4\r\nHSET\r\n" 10 + "$25\r\n" 5 + 27 + "$1\r\nf\r\n" 7 + "$2\r\nvv\r\n" 8 = 61.
	if m.total != 2*42+61 || m.byCommand["set"] != 84 || m.byCommand["hset"] != 61 {
		t.Fatalf("mix %+v; want 145 bytes: set 84, hset 61", m)
	}
	if m.byKey["sigops:result:*"] != 84 || m.byKey["sigops:book:*:*:pos"] != 61 {
		t.Fatalf("by key %v; want sigops:result:* 84, sigops:book:*:*:pos 61", m.byKey)
	}
	if got := top(m.byCommand, m.total, 1); got != "set 57.9%" { // 84/145
		t.Fatalf("top command %q; want set 57.9%%", got)
	}
}
