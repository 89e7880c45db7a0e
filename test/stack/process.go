package stack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process in its own process group, so that a Ctrl-C in the terminal
// reaches only the program that started it, which then stops its children in order.
type Process struct {
	// Name is used in errors ("redis-server", "manager").
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result; valid once done is closed
	tail *tailBuffer
}

// startProcess starts cmd with its output written to logPath, emptied first (or discarded
// when empty); the last few KiB of output are also kept for error messages.
func startProcess(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	return startLogged(name, cmd, logPath, os.O_TRUNC)
}

// startLogged is startProcess with the log file opened with mode: os.O_TRUNC to start it
// afresh, os.O_APPEND to add to it (a restarted daemon's log follows its previous run's).
func startLogged(name string, cmd *exec.Cmd, logPath string, mode int) (*Process, error) {
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{}), tail: &tailBuffer{max: 8 << 10}}
	var out io.Writer = p.tail
	var logFile *os.File
	if logPath != "" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|mode, 0o644)
		if err != nil {
			return nil, err
		}
		logFile = f
		out = io.MultiWriter(f, p.tail)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // keeping what the caller set (the user a server runs as)
	// Children the process leaves behind (nginx's workers when its master is killed) hold
	// the output pipe open; Wait stops waiting for them after this, and they are killed
	// with their group below, as a container's processes die with its main one.
	cmd.WaitDelay = 500 * time.Millisecond
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		if errors.Is(p.err, exec.ErrWaitDelay) {
			p.err = nil // the process itself exited cleanly; only its children lingered
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if logFile != nil {
			_ = logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is how the process ended; call it only after Done is closed.
func (p *Process) ExitErr() error { return p.err }

// Tail is the last output of the process, for error messages.
func (p *Process) Tail() string { return p.tail.String() }

// exited describes an unexpected exit, with the process's last output.
func (p *Process) exited() error {
	return fmt.Errorf("%s exited (%v); last output:\n%s", p.Name, p.err, indent(p.Tail()))
}

// Kill sends SIGKILL, as a crash or the kernel's OOM killer would, without waiting.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	return nil
}

// Stop sends SIGTERM and waits up to timeout for the process to exit, then kills it.
// A process that already exited is not an error.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not stop within %s after SIGTERM; killed", p.Name, timeout)
}

// PeakRSS is the process's peak resident set size in bytes (VmHWM); it can be read only
// while the process runs.
func (p *Process) PeakRSS() (uint64, error) { return PeakRSS(p.Pid()) }

// PeakRSS reads the peak resident set size (VmHWM in /proc/<pid>/status) in bytes.
func PeakRSS(pid int) (uint64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		v, ok := strings.CutPrefix(s.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(v) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("pid %d: unexpected VmHWM line %q", pid, s.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("pid %d: VmHWM: %w", pid, err)
		}
		return kb * 1024, nil
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("pid %d: no VmHWM in /proc status", pid)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree reports whether port on 127.0.0.1 can be bound now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// RepoRoot finds the repository root (the directory of sigops's go.mod) from the working
// directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/sigops/sigops\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the sigops repository (no go.mod of github.com/sigops/sigops above the working directory)")
		}
		dir = parent
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "  (no output)"
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
