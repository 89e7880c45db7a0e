// Package pgserver runs a local PostgreSQL server from Debian's packages (postgresql), as the
// tests and the local stack do: initdb of a data directory, then postgres on a loopback
// port. PostgreSQL refuses to run as root; when the caller is root (a CI machine, a
// container) both run as the packages' own postgres user, which owns the data directory.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinEnv names the environment variable that chooses the directory of initdb and postgres
// (e.g. /usr/lib/postgresql/16/bin). Unset: the newest of Debian's /usr/lib/postgresql/*/bin,
// else the PATH.
const BinEnv = "SIGOPS_PG_BIN"

// User is the database role initdb creates: the superuser of a local server.
const User = "sigops"

// Bin returns the path of a PostgreSQL server program (initdb, postgres, pg_ctl).
func Bin(name string) (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", BinEnv, err)
		}
		return p, nil
	}
	// Debian keeps the server programs out of the PATH, one directory per major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	for _, d := range dirs {
		if p := filepath.Join(d, name); isExec(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL's %s not found: run hack/install-deps.sh (make deps), or set %s", name, BinEnv)
	}
	return p, nil
}

func major(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Options say how a server runs.
type Options struct {
	// DataDir is the cluster's directory; Init creates it.
	DataDir string
	// Port on 127.0.0.1.
	Port int
	// Durable keeps PostgreSQL's defaults (fsync, full-page writes): the local stack. Off
	// (tests) a crash of the machine may lose the data; a crash of the server does not.
	Durable bool
}

// URL is the server's connection string for database db.
func (o Options) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)), Path: "/" + db,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// Init creates the data directory's cluster unless it has one: role User, trust
// authentication (the server listens on loopback only), UTF-8.
func Init(ctx context.Context, o Options) error {
	if _, err := os.Stat(filepath.Join(o.DataDir, "PG_VERSION")); err == nil {
		return nil
	}
	bin, err := Bin("initdb")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return err
	}
	if err := OwnDir(o.DataDir); err != nil {
		return err
	}
	args := []string{"-D", o.DataDir, "-U", User, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"}
	if !o.Durable {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	if err := asServerUser(cmd); err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb %s: %w: %s", o.DataDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Command is the postgres command that serves o: TCP on 127.0.0.1 only, no Unix socket
// (a temporary directory's path can be longer than a socket's), its log to stderr.
func Command(o Options) (*exec.Cmd, error) {
	bin, err := Bin("postgres")
	if err != nil {
		return nil, err
	}
	args := []string{"-D", o.DataDir, "-p", strconv.Itoa(o.Port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "max_connections=200"}
	if !o.Durable {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off")
	}
	cmd := exec.Command(bin, args...)
	if err := asServerUser(cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// WaitReady waits until the server at o answers a query on database postgres, or ctx ends,
// or exited is closed (the server stopped).
func WaitReady(ctx context.Context, o Options, exited <-chan struct{}) error {
	var last error
	for {
		c, err := pgx.Connect(ctx, o.URL("postgres"))
		if err == nil {
			err = c.Ping(ctx)
			_ = c.Close(ctx)
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres on port %d did not answer: %w", o.Port, errors.Join(ctx.Err(), last))
		case <-exited:
			return fmt.Errorf("postgres on port %d exited (its port may have been taken): %w", o.Port, last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// CreateDatabase creates database name on the server at o unless it exists.
func CreateDatabase(ctx context.Context, o Options, name string) error {
	c, err := pgx.Connect(ctx, o.URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// serverUser is the account PostgreSQL runs as when the caller is root; nil otherwise.
func serverUser() (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL does not run as root and there is no postgres user to run it as (install the postgresql package: hack/install-deps.sh): %w", err)
	}
	return u, nil
}

// asServerUser makes cmd run as serverUser, when there is one.
func asServerUser(cmd *exec.Cmd) error {
	u, err := serverUser()
	if err != nil || u == nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	cmd.Dir = "/" // the caller's directory may be closed to that user
	return nil
}

// OwnDir gives path to serverUser, when there is one, and makes sure it can reach it.
func OwnDir(path string) error {
	u, err := serverUser()
	if err != nil || u == nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return err
	}
	// Every directory above it must let that user pass (a test's temporary directory is
	// 0700): add the search bit for others, never the read bit.
	for dir := filepath.Dir(path); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(dir, st.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
	}
	return nil
}
