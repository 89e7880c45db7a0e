// Package database is sigops' PostgreSQL: the record of what a user owns and of trading
// history, where Redis holds only hot state that can be rebuilt. It opens the connection
// pool every daemon shares (pgx) and applies the schema's migrations, embedded in the
// binary, at start (pressly/goose, under a PostgreSQL advisory lock so that replicas
// starting together apply each migration once).
package database

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// URLEnv names the environment variable that carries the connection string when no flag
// gives one (the local stack writes it into bin/local/env; config/ takes it from a Secret).
const URLEnv = "DATABASE_URL"

//go:embed migrations/*.sql
var migrations embed.FS

// Open connects a pool to url (a postgres:// URL or key=value DSN), checks that the server
// answers within timeout and applies the pending migrations.
func Open(ctx context.Context, url string, timeout time.Duration) (*pgxpool.Pool, error) {
	pool, err := Pool(ctx, url)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		cfg := pool.Config().ConnConfig
		pool.Close()
		return nil, fmt.Errorf("database: %s:%d does not answer: %w", cfg.Host, cfg.Port, err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Migrate applies every migration not applied yet, in order.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := provider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("database: migrate: %w", err)
	}
	return nil
}

// Pool is a pool on url that connects when first used, so that a daemon whose work goes on
// without PostgreSQL (the executor: signals fill while the archive waits) starts and stays
// ready while the database is down. MigrateWhenUp then prepares the schema.
func Pool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("database: no connection string (--database-url or " + URLEnv + ")")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("database: the connection string does not parse")
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// MigrateWhenUp applies the migrations (Migrate) once PostgreSQL answers, trying again with
// a growing pause (up to 10 s) and logging each failure, until it succeeds or ctx ends.
func MigrateWhenUp(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	wait := 250 * time.Millisecond
	for {
		err := Migrate(ctx, pool)
		if err == nil {
			return nil
		}
		log.Warn("database: not ready; trying again", "error", err, "retryIn", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// Version is the schema's version: the newest migration applied.
func Version(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	p, db, err := provider(pool)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return p.GetDBVersion(ctx)
}

// Down reverts the newest migration applied (an operator's step back before a downgrade).
func Down(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := provider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = p.Down(ctx)
	return err
}

func provider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker))
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("database: migrations: %w", err)
	}
	return p, db, nil
}
