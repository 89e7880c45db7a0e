package localstack

import (
	"context"

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
