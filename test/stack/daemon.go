package stack

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// DaemonOptions configure StartDaemon.
type DaemonOptions struct {
	// Name is used in logs and errors (webhookd, executor).
	Name   string
	Binary string
	Args   []string
	// ReadyURL is polled until it answers 200.
	ReadyURL string
	LogFile  string
	// ReadyTimeout bounds the wait; 0 means 60 s.
	ReadyTimeout time.Duration
	// Env is the whole environment of the process; empty inherits this one's.
	Env []string
}

// command is the daemon's command line, with its environment (this process's when Env is
// empty).
func (o DaemonOptions) command() *exec.Cmd {
	cmd := exec.Command(o.Binary, o.Args...)
	if len(o.Env) > 0 {
		cmd.Env = o.Env
	}
	return cmd
}

// StartDaemon starts one of the sigops daemons and waits until it is ready.
func StartDaemon(ctx context.Context, o DaemonOptions) (*Process, error) {
	p, err := startProcess(o.Name, o.command(), o.LogFile)
	if err != nil {
		return nil, err
	}
	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := waitHTTPOK(ctx, p, o.ReadyURL, timeout); err != nil {
		return nil, errors.Join(err, p.Stop(10*time.Second))
	}
	return p, nil
}
