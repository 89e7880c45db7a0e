package exchange

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond, 0) {
		t.Fatal("no deadline: Sleep should wait and return true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if Sleep(ctx, 40*time.Millisecond, 20*time.Millisecond) {
		t.Fatal("40 ms + 20 ms margin does not fit in 50 ms: want false")
	}
	if time.Since(start) > 10*time.Millisecond {
		t.Fatalf("waited %s before refusing", time.Since(start))
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel2() }()
	if Sleep(ctx2, time.Second, 0) {
		t.Fatal("cancelled context: want false")
	}
}
