package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Restart backoff defaults of SupervisedOptions. Kubernetes starts at 10 s and caps at
// 5 min; a stack on one machine restarts sooner, so that a failover can be watched.
const (
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	DefaultStableAfter = time.Minute
)

// SupervisedOptions configure Supervise.
type SupervisedOptions struct {
	DaemonOptions
	// Logf reports each exit and restart (nil: nowhere).
	Logf func(format string, args ...any)
	// Backoff is the delay before the first restart; it doubles after each exit up to
	// MaxBackoff and goes back to Backoff once a run lasted StableAfter, as a Deployment's
	// crash-loop backoff does. Zero values take the defaults above.
	Backoff, MaxBackoff, StableAfter time.Duration
	// MaxStartFailures, when positive, ends the supervision after that many starts in a row
	// failed (the program could not even be run: a Redis whose port another process took);
	// Failed then closes and Err says why. 0 tries for ever.
	MaxStartFailures int
	// OnStart is called after every restart (not the first start) with the new run.
	OnStart func(*Supervised)
}

// Supervised is a daemon that is started again whenever it exits, until Stop: what a
// Deployment does for its pods. Its log file collects every run, one after the other.
type Supervised struct {
	o SupervisedOptions
	// start makes one run after the first.
	start    func() (*Process, error)
	mu       sync.Mutex
	cur      *Process
	restarts int
	err      error // why the supervision gave up
	quit     chan struct{}
	done     chan struct{}
	failed   chan struct{}
	stop     sync.Once
}

// Supervise starts the daemon, waits until it is ready (an error when it is not: a daemon
// that cannot start at all is not restarted), then restarts it whenever it exits.
func Supervise(ctx context.Context, o SupervisedOptions) (*Supervised, error) {
	p, err := StartDaemon(ctx, o.DaemonOptions)
	if err != nil {
		return nil, err
	}
	return SuperviseProcess(p, o, func() (*Process, error) {
		return startLogged(o.Name, o.command(), o.LogFile, os.O_APPEND)
	}), nil
}

// SuperviseProcess supervises a process already started (first), restarting it with
// restart whenever it exits: for programs started otherwise than a daemon (a Redis server,
// nginx), whose restart waits for them in its own way. Only o's Name, LogFile and
// supervision fields are used.
func SuperviseProcess(first *Process, o SupervisedOptions, restart func() (*Process, error)) *Supervised {
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.Backoff)
	}
	if o.StableAfter <= 0 {
		o.StableAfter = DefaultStableAfter
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	s := &Supervised{o: o, start: restart, cur: first, quit: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{})}
	go s.watch(time.Now())
	return s
}

// watch waits for each run to end and starts the next after the backoff.
func (s *Supervised) watch(started time.Time) {
	defer close(s.done)
	backoff := s.o.Backoff
	for {
		p := s.Current()
		select {
		case <-s.quit:
			return
		case <-p.Done():
		}
		select {
		case <-s.quit: // Stop ended it
			return
		default:
		}
		if time.Since(started) >= s.o.StableAfter {
			backoff = s.o.Backoff
		}
		s.o.Logf("%s (pid %d) exited (%v); restarting in %s", s.o.Name, p.Pid(), p.ExitErr(), backoff)
		next, ok := s.restart(backoff, p.ExitErr())
		if !ok {
			return
		}
		backoff = min(2*backoff, s.o.MaxBackoff)
		started = time.Now()
		s.mu.Lock()
		s.cur, s.restarts = next, s.restarts+1
		s.mu.Unlock()
		s.o.Logf("%s restarted (pid %d)", s.o.Name, next.Pid())
		if s.o.OnStart != nil {
			s.o.OnStart(s)
		}
	}
}

// restart waits backoff, then starts the program again, retrying (with the same backoff)
// while it cannot even be started, up to MaxStartFailures; false when Stop came first or
// it gave up.
func (s *Supervised) restart(backoff time.Duration, cause error) (*Process, bool) {
	for failures := 0; ; failures++ {
		if s.o.MaxStartFailures > 0 && failures >= s.o.MaxStartFailures {
			s.mu.Lock()
			s.err = fmt.Errorf("%s could not be started again %d times: %w", s.o.Name, failures, cause)
			s.mu.Unlock()
			close(s.failed)
			return nil, false
		}
		select {
		case <-s.quit:
			return nil, false
		case <-time.After(backoff):
		}
		s.note(cause)
		p, err := s.start()
		if err == nil {
			return p, true
		}
		s.o.Logf("%s: %v; trying again in %s", s.o.Name, err, backoff)
		cause = err
	}
}

// Failed is closed when the supervision gave up (MaxStartFailures); Err says why.
func (s *Supervised) Failed() <-chan struct{} { return s.failed }

// Err is why the supervision gave up, or nil.
func (s *Supervised) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// LogFile is where every run's output goes.
func (s *Supervised) LogFile() string { return s.o.LogFile }

// ReadyURL is the daemon's readiness URL ("" for a program without one).
func (s *Supervised) ReadyURL() string { return s.o.ReadyURL }

// note marks in the log file where the next run starts, and why.
func (s *Supervised) note(cause error) {
	if s.o.LogFile == "" {
		return
	}
	f, err := os.OpenFile(s.o.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "--- %s: restarted after the previous run ended (%v) ---\n", time.Now().UTC().Format(time.RFC3339), cause)
}

// Current is the process running now (or the one that last exited, until it is restarted).
func (s *Supervised) Current() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Name is the daemon's name.
func (s *Supervised) Name() string { return s.o.Name }

// Pid is the current process's ID.
func (s *Supervised) Pid() int { return s.Current().Pid() }

// Restarts is how many times the daemon was started again.
func (s *Supervised) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Kill sends SIGKILL to the current process; the supervisor then restarts it.
func (s *Supervised) Kill() error { return s.Current().Kill() }

// WaitReady waits until a run of the daemon (the current one, or the next after a restart)
// answers its ReadyURL, for at most timeout.
func (s *Supervised) WaitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p := s.Current()
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s not ready within %s", s.o.Name, timeout)
		}
		err := waitHTTPOK(ctx, p, s.o.ReadyURL, left)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-p.Done(): // it exited meanwhile: wait for the next run
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New(s.o.Name + " is no longer supervised")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop ends the supervision and stops the current process (SIGTERM, then SIGKILL after
// timeout).
func (s *Supervised) Stop(timeout time.Duration) error {
	s.stop.Do(func() { close(s.quit) })
	<-s.done
	return s.Current().Stop(timeout)
}
