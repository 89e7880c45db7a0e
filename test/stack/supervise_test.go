package stack

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemonEnv makes the test binary, started again by a test, serve /readyz on the address
// it names instead of running the tests: a stand-in daemon that prints its pid and runs
// until killed.
const daemonEnv = "SIGOPS_STACK_TEST_DAEMON"

func TestMain(m *testing.M) {
	if addr := os.Getenv(daemonEnv); addr != "" {
		fmt.Printf("stand-in daemon pid %d serving %s\n", os.Getpid(), addr)
		http.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		if err := http.ListenAndServe(addr, nil); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		return
	}
	os.Exit(m.Run())
}

func TestSupervisedDaemonRestartsAfterKill(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.Setenv(daemonEnv, addr) // inherited by the stand-in daemon
	log := filepath.Join(t.TempDir(), "daemon.log")
	var events []string
	logf := make(chan string, 16)
	s, err := Supervise(t.Context(), SupervisedOptions{
		DaemonOptions: DaemonOptions{Name: "stand-in", Binary: os.Args[0], LogFile: log, ReadyURL: "http://" + addr + "/readyz"},
		Logf:          func(f string, a ...any) { logf <- fmt.Sprintf(f, a...) },
		Backoff:       100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := s.Pid()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if s.Restarts() != 1 || s.Pid() == first {
		t.Fatalf("after a kill: %d restarts, pid %d (was %d); want one restart with a new pid", s.Restarts(), s.Pid(), first)
	}
	for range 2 {
		select {
		case e := <-logf:
			events = append(events, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("supervisor reported %q; want an exit and a restart", events)
		}
	}
	if !strings.Contains(events[0], "signal: killed") || !strings.Contains(events[1], "restarted (pid "+strconv.Itoa(s.Pid())+")") {
		t.Errorf("supervisor reported %q", events)
	}

	second := s.Pid()
	if err := s.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // three backoffs: time enough for a wrong restart
	if s.Restarts() != 1 {
		t.Errorf("restarted after Stop: %d restarts", s.Restarts())
	}
	if _, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		t.Error("something still serves the daemon's address after Stop")
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Both runs' output, in order, with the restart marked between them.
	text := string(data)
	one, two := strings.Index(text, fmt.Sprintf("pid %d ", first)), strings.Index(text, fmt.Sprintf("pid %d ", second))
	mark := strings.Index(text, "restarted after the previous run ended (signal: killed)")
	if one < 0 || mark < one || two < mark {
		t.Errorf("log file does not hold run 1, the restart mark, then run 2:\n%s", text)
	}
}

// A process killed while its children hold its output (nginx's workers when its master
// dies) is seen to exit, and its children die with it, as a container's processes die with
// its main one: otherwise the supervisor would wait for ever, and the orphans would keep
// the ports its restart needs.
func TestKilledProcessTakesItsChildren(t *testing.T) {
	p, err := startProcess("sh", exec.Command("sh", "-c", "sleep 300 & echo child $!; wait"), "")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
		if _, err := fmt.Sscanf(p.Tail(), "child %d", &child); err != nil && time.Now().After(deadline) {
			t.Fatalf("no child pid in %q", p.Tail())
		}
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the killed process was not seen to exit while its child held its output")
	}
	for deadline := time.Now().Add(5 * time.Second); alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its killed parent", child)
		}
	}
}

// alive reports whether pid runs (a zombie, dead but not yet reaped, does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A program that cannot be started again ends its supervision after MaxStartFailures
// tries, with the cause, so that the local stack can stop and say why.
func TestSupervisorGivesUpOnAProgramThatCannotStart(t *testing.T) {
	first, err := startProcess("true", exec.Command("true"), "")
	if err != nil {
		t.Fatal(err)
	}
	tries := 0
	s := SuperviseProcess(first, SupervisedOptions{DaemonOptions: DaemonOptions{Name: "doomed"}, Backoff: 10 * time.Millisecond, MaxStartFailures: 3},
		func() (*Process, error) { tries++; return nil, errors.New("port taken") })
	select {
	case <-s.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not give up")
	}
	if tries != 3 || s.Err() == nil || !strings.Contains(s.Err().Error(), "port taken") || s.Restarts() != 0 {
		t.Errorf("%d tries, err %v, %d restarts; want 3 tries, the cause, none restarted", tries, s.Err(), s.Restarts())
	}
	if err := s.Stop(time.Second); err != nil {
		t.Error(err)
	}
}
