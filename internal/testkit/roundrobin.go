package testkit

import (
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// RoundRobin is an http.RoundTripper that sends each request to the next of its hosts in
// turn, as a load balancer without affinity would, and counts the requests per host: a
// client built on it spreads one session over several replicas.
type RoundRobin struct {
	next  http.RoundTripper
	hosts []string
	n     atomic.Int64
	mu    sync.Mutex
	seen  []int64
}

// NewRoundRobin sends requests through next to the hosts of urls (https://host:port...).
func NewRoundRobin(next http.RoundTripper, urls ...string) *RoundRobin {
	rr := &RoundRobin{next: next, seen: make([]int64, len(urls))}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			panic(err)
		}
		rr.hosts = append(rr.hosts, u.Host)
	}
	return rr
}

// RoundTrip sends r to the next host.
func (rr *RoundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(rr.n.Add(1)-1) % len(rr.hosts)
	rr.mu.Lock()
	rr.seen[i]++
	rr.mu.Unlock()
	r = r.Clone(r.Context())
	r.URL.Host = rr.hosts[i]
	r.Host = rr.hosts[i]
	return rr.next.RoundTrip(r)
}

// Seen is the number of requests sent to the i-th host.
func (rr *RoundRobin) Seen(i int) int64 {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.seen[i]
}
