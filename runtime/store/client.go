package store

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options are how a process reaches Redis. Every daemon takes the same flags.
type Options struct {
	Addr string
	DB   int
	// PasswordFile holds the password (a mounted Secret); empty means none. The password
	// never travels in a flag, so it does not show in process listings.
	PasswordFile string
}

// Connect opens a client and checks it answers, so that a misconfigured address fails at
// start-up rather than on the first signal.
func Connect(ctx context.Context, o Options) (*redis.Client, error) {
	password := ""
	if o.PasswordFile != "" {
		b, err := os.ReadFile(o.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("read redis password file: %w", err)
		}
		password = string(trimNewline(b))
	}
	c := redis.NewClient(&redis.Options{
		Addr:         o.Addr,
		DB:           o.DB,
		Password:     password,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
	})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis at %s: %w", o.Addr, err)
	}
	return c, nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
