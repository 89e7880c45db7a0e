package localstack

import (
	"context"
	"errors"
	"sync"

	"github.com/sigops/sigops/test/stack"
)

// startPostgres starts PostgreSQL with its data in postgresDir (kept across runs; -fresh
// removes it), supervised like Redis, on its fixed port or a free one when that is taken.
// The daemons get its URL with --database-url, and bin/local/env carries it as DATABASE_URL.
func (s *Stack) startPostgres(ctx context.Context) error {
	port := s.o.PostgresPort
	if !stack.PortFree(port) {
		var err error
		if port, err = stack.FreePort(); err != nil {
			return err
		}
		s.printf("port %d is taken; using %d for PostgreSQL\n", s.o.PostgresPort, port)
	}
	s.printf("starting postgresql on 127.0.0.1:%d (data: %s, log: %s)\n", port, s.rel(s.postgresDir), s.rel(s.postgresLog))
	o := stack.PostgresOptions{Port: port, DataDir: s.postgresDir, LogFile: s.postgresLog, Database: Database}
	pg, err := stack.StartPostgres(ctx, o)
	if err != nil {
		return err
	}
	s.postgres = pg
	o.AppendLog = true
	s.superviseStore("postgres", pg.Process, s.postgresLog, s.o.Backoff, func() (*stack.Process, error) {
		s.pgHold.wait()
		n, err := stack.StartPostgres(context.WithoutCancel(ctx), o)
		if err != nil {
			return nil, err
		}
		return n.Process, nil
	})
	return nil
}

// DatabaseURL is how the daemons reach the stack's PostgreSQL.
func (s *Stack) DatabaseURL() string { return s.postgres.URL }

// pgHold keeps the supervisor from restarting PostgreSQL while an outage is being drilled.
type pgHold struct {
	mu       sync.Mutex
	released chan struct{} // nil: not held
}

func (h *pgHold) wait() {
	h.mu.Lock()
	c := h.released
	h.mu.Unlock()
	if c != nil {
		<-c
	}
}

// HoldPostgres kills PostgreSQL (kill -9: a crash, which it recovers from with its WAL) and
// keeps it down until the returned release is called; its supervisor then starts it again
// on the same port and data. The outage drill of the local stack's test.
func (s *Stack) HoldPostgres() (release func(), err error) {
	s.pgHold.mu.Lock()
	if s.pgHold.released != nil {
		s.pgHold.mu.Unlock()
		return nil, errors.New("PostgreSQL is already held down")
	}
	c := make(chan struct{})
	s.pgHold.released = c
	s.pgHold.mu.Unlock()
	var p *stack.Process
	for _, r := range s.storeRuns {
		if r.Name() == "postgres" {
			p = r.Current()
		}
	}
	if p == nil {
		return nil, errors.New("PostgreSQL is not supervised by this stack")
	}
	if err := p.Kill(); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.pgHold.mu.Lock()
			s.pgHold.released = nil
			s.pgHold.mu.Unlock()
			close(c)
		})
	}, nil
}
