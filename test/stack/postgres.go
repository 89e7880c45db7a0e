package stack

import (
	"context"
	"os"
	"time"

	"github.com/sigops/sigops/internal/pgserver"
)

// PostgresOptions configure StartPostgres.
type PostgresOptions struct {
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// DataDir holds the cluster (created on first start, kept across runs).
	DataDir string
	// LogFile receives the server's log; AppendLog adds to it (a restart's log follows).
	LogFile   string
	AppendLog bool
	// Database is created on first start.
	Database string
}

// Postgres is a running PostgreSQL server.
type Postgres struct {
	*Process
	pgserver.Options
	// URL reaches Database.
	URL string
}

// StartPostgres initialises DataDir if it has no cluster, starts postgres on 127.0.0.1 with
// PostgreSQL's durable defaults (the local stack's data is a user's history), waits until
// it answers and creates the database.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	port := o.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	po := pgserver.Options{DataDir: o.DataDir, Port: port, Durable: true}
	if err := pgserver.Init(ctx, po); err != nil {
		return nil, err
	}
	cmd, err := pgserver.Command(po)
	if err != nil {
		return nil, err
	}
	mode := os.O_TRUNC
	if o.AppendLog {
		mode = os.O_APPEND
	}
	p, err := startLogged("postgres", cmd, o.LogFile, mode)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pgserver.WaitReady(wctx, po, p.Done()); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	if err := pgserver.CreateDatabase(ctx, po, o.Database); err != nil {
		_ = p.Stop(5 * time.Second)
		return nil, err
	}
	return &Postgres{Process: p, Options: po, URL: po.URL(o.Database)}, nil
}
