// Package storetest starts a real, throwaway redis-server for tests. Every caller gets its
// own server on a free loopback port, so tests never share state.
package storetest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server.
type Server struct {
	Addr string
	cmd  *exec.Cmd
}

// Start runs redis-server on a free port with persistence off. It fails (never skips) when
// redis-server is missing: `make test` installs it, and a skipped test proves nothing.
func Start() (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found: run hack/install-deps.sh (make deps)")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { // drain the log so redis never blocks on a full pipe
		s := bufio.NewScanner(out)
		for s.Scan() {
		}
	}()
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %w", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Client returns a new client of the server.
func (s *Server) Client() *redis.Client { return redis.NewClient(&redis.Options{Addr: s.Addr}) }

// New starts a server for one test and stops it when the test ends.
func New(t testing.TB) (*Server, *redis.Client) {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client()
	t.Cleanup(func() { _ = c.Close(); s.Stop() })
	return s, c
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
