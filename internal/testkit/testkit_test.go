package testkit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	start := time.Now()
	n := 0
	Eventually(t, time.Second, "third call", func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("check called %d times, want 3", n)
	}
	if time.Since(start) < 2*PollInterval {
		t.Fatalf("returned after %s without polling", time.Since(start))
	}
}

// fakeT records a failure instead of stopping the calling test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != ft {
				t.Fatalf("recovered %v", r)
			}
		}()
		Eventually(ft, 30*time.Millisecond, "never", func() error { return errors.New("still 3") })
	}()
	if want := "never (not within 30ms): still 3"; ft.failed != want {
		t.Fatalf("failure %q, want %q", ft.failed, want)
	}
}

func TestLogBufferConcurrentWriters(t *testing.T) {
	var b LogBuffer
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	if got := len(b.String()); got < 20*len("line 0\n") {
		t.Fatalf("%d bytes written", got)
	}
	if !b.Contains("line 19\n") {
		t.Fatal("line 19 missing")
	}
}

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 23, 59, 0, 0, time.UTC)
	c := NewClock(t0)
	c.Advance(2 * time.Minute)
	if got := c.Now(); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("Now %s", got)
	}
	w := WallClock()
	w.Advance(time.Hour)
	if d := time.Until(w.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("wall clock ahead by %s, want an hour", d)
	}
}

func TestDecimal(t *testing.T) {
	if got := D("0.10").Add(D("0.20")); !got.Equal(D("0.3")) {
		t.Fatalf("0.10+0.20 = %s", got)
	}
	if DP("1.5").String() != "1.5" {
		t.Fatal("DP")
	}
}

// errorT records Errorf instead of failing the calling test.
type errorT struct {
	testing.TB
	errs []string
}

func (e *errorT) Helper() {}
func (e *errorT) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestEqualD(t *testing.T) {
	et := &errorT{TB: t}
	EqualD(et, "balance", D("1.50"), "1.5")
	if len(et.errs) != 0 {
		t.Fatalf("equal values reported: %v", et.errs)
	}
	EqualD(et, "balance", D("1.51"), "1.5")
	EqualD(et, "fee", D("0.1"), "0.2")
	if want := []string{"balance = 1.51, want 1.5", "fee = 0.1, want 0.2"}; fmt.Sprint(et.errs) != fmt.Sprint(want) {
		t.Fatalf("errors %q, want %q", et.errs, want)
	}
}

func TestForgeJWT(t *testing.T) {
	key := []byte("k")
	s := ForgeJWT(t, jwt.SigningMethodHS256, key, "kid-1", jwt.MapClaims{"sub": "u1"})
	tok, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return key, nil })
	if err != nil || tok.Header["kid"] != "kid-1" {
		t.Fatalf("token %v, err %v", tok, err)
	}
}
