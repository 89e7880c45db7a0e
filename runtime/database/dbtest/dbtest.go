// Package dbtest gives tests a real PostgreSQL: one server per test binary (a package's
// tests), started on first use on a free loopback port in a temporary directory, and a new
// database for every test, created from a migrated template, so tests never share rows.
//
// The server outlives no test binary: it runs under a small shell that holds a pipe from
// the binary and stops the server (and removes its directory) when the pipe closes, which
// the kernel does when the binary exits for any reason, a panic or a kill included.
package dbtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/internal/pgserver"
	"github.com/sigops/sigops/runtime/database"
)

const template = "sigops_template"

var (
	once    sync.Once
	shared  *Server
	started error
	serial  atomic.Int64
)

// Server is the test binary's PostgreSQL.
type Server struct {
	pgserver.Options
	// hold is the pipe whose end stops the server; kept here so that it is never closed
	// (a collected *os.File closes itself).
	hold *os.File
	cmd  *exec.Cmd
	base string
}

// Shared starts the binary's server on first use and returns it.
func Shared() (*Server, error) {
	once.Do(func() {
		for range 3 { // a free port can be taken before the server binds it
			if shared, started = start(); started == nil {
				return
			}
		}
	})
	return shared, started
}

// New returns a pool on a new, migrated database of its own for t, closed and dropped when
// t ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, NewURL(t))
}

// Pool is a pool on url (a database of NewURL), closed when t ends: a test that reaches one
// database through two pools (one of them cut off, say) opens the second with it.
func Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a new, migrated database for t and returns its connection string (for a
// daemon's flag); it is dropped when t ends.
func NewURL(t testing.TB) string {
	t.Helper()
	s, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), serial.Add(1))
	ctx := context.Background()
	if err := s.exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { _ = s.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return s.URL(name)
}

// SuiteURL creates a new, migrated database for a whole test binary (a suite's stack made
// in TestMain, where there is no t) and returns its connection string; it goes with the
// server when the binary exits.
func SuiteURL() (string, error) {
	s, err := Shared()
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("s_%d_%d", os.Getpid(), serial.Add(1))
	if err := s.exec(context.Background(), "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		return "", fmt.Errorf("create the suite's database: %w", err)
	}
	return s.URL(name), nil
}

// exec runs one statement on the server's postgres database.
func (s *Server) exec(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

// start runs initdb and the server, then makes the migrated template database.
func start() (*Server, error) {
	base, err := os.MkdirTemp("", "sigops-pg-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Options: pgserver.Options{DataDir: filepath.Join(base, "data"), Port: port}, base: base}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pgserver.OwnDir(base); err != nil {
		return nil, err
	}
	if err := pgserver.Init(ctx, s.Options); err != nil {
		_ = os.RemoveAll(base)
		return nil, err
	}
	pg, err := pgserver.Command(s.Options)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(base, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	if err := pgserver.OwnDir(logPath); err != nil {
		return nil, err
	}
	// The shell starts postgres, stops it with a fast shutdown once its stdin (held by this
	// binary) reaches EOF, and removes the directory after postgres exits either way.
	// (A background list's stdin is /dev/null in a shell without job control: the pipe is
	// kept on descriptor 3 for the watcher.)
	script := `exec 3<&0; "$0" "$@" </dev/null & pid=$!; (read _ <&3; kill -INT $pid) & wait $pid; rm -rf "$SIGOPS_PG_BASE"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, pg.Path}, pg.Args[1:]...)...)
	cmd.SysProcAttr, cmd.Dir = pg.SysProcAttr, pg.Dir
	cmd.Env = append(os.Environ(), "SIGOPS_PG_BASE="+base)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = r.Close()
	s.hold, s.cmd = w, cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := pgserver.WaitReady(ctx, s.Options, exited); err != nil {
		log, _ := os.ReadFile(logPath)
		_ = w.Close()
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(log)))
	}
	if err := s.makeTemplate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// makeTemplate creates the template database with every migration applied. Its pool is
// closed before any copy: PostgreSQL copies a template only while nobody is connected to it.
func (s *Server) makeTemplate(ctx context.Context) error {
	if err := s.exec(ctx, "CREATE DATABASE "+template); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, s.URL(template))
	if err != nil {
		return err
	}
	defer pool.Close()
	return database.Migrate(ctx, pool)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return strconv.Atoi(p)
}
