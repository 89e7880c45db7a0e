package localstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sigops/sigops/test/stack"
)

// PidsFile lists, under the state directory, every supervised program of a running stack:
// one line each of name, PID, restarts, readiness URL ("-" for none) and log file,
// separated by tabs. It is rewritten whenever one is restarted, and removed at Stop.
const PidsFile = "pids"

var pidsMu sync.Mutex

// writePids rewrites the pids file from the supervisors (in one rename, so that a reader
// never sees half of it).
func (s *Stack) writePids() {
	pidsMu.Lock()
	defer pidsMu.Unlock()
	var b strings.Builder
	for _, d := range append(append([]*stack.Supervised{}, s.storeRuns...), s.Daemons()...) {
		ready := d.ReadyURL()
		if ready == "" {
			ready = "-"
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%s\t%s\n", d.Name(), d.Pid(), d.Restarts(), ready, d.LogFile())
	}
	tmp := s.pids + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err == nil {
		_ = os.Rename(tmp, s.pids)
	}
}

// Entry is one line of the pids file.
type Entry struct {
	Name          string
	Pid, Restarts int
	ReadyURL, Log string
}

// ReadPids reads the pids file of the stack whose state directory is dir.
func ReadPids(dir string) ([]Entry, error) {
	f, err := os.Open(dir + "/" + PidsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no local stack is running (%s/%s is missing)", dir, PidsFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 5 {
			return nil, fmt.Errorf("%s: malformed line %q", PidsFile, sc.Text())
		}
		pid, err1 := strconv.Atoi(fields[1])
		restarts, err2 := strconv.Atoi(fields[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: %w", PidsFile, err)
		}
		ready := fields[3]
		if ready == "-" {
			ready = ""
		}
		out = append(out, Entry{Name: fields[0], Pid: pid, Restarts: restarts, ReadyURL: ready, Log: fields[4]})
	}
	return out, sc.Err()
}

// Health is what Status found of one entry: whether its process runs and, for a daemon,
// whether its /readyz answers 200.
func (e Entry) Health(ctx context.Context) string {
	if err := syscall.Kill(e.Pid, 0); err != nil {
		return "not running"
	}
	if e.ReadyURL == "" {
		return "running"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ReadyURL, nil)
	if err != nil {
		return "running, readiness unknown"
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "running, not ready (" + err.Error() + ")"
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("running, not ready (%d)", resp.StatusCode)
	}
	return "ready"
}

// Status writes the table of a running stack's programs: name, PID, restarts and health.
func Status(ctx context.Context, w io.Writer, dir string) error {
	entries, err := ReadPids(dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tRESTARTS\tHEALTH\tLOG")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", e.Name, e.Pid, e.Restarts, e.Health(ctx), e.Log)
	}
	return tw.Flush()
}
