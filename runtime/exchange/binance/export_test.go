package binance

import "strings"

// ForgetEndpoint drops what the package shares per endpoint (exchange information, clock
// offset, in-flight orders), so that a test server on a reused port starts clean.
func ForgetEndpoint(base string) {
	markets.mu.Lock()
	for k := range markets.entries {
		if strings.HasPrefix(k, base+"|") {
			delete(markets.entries, k)
		}
	}
	markets.mu.Unlock()
	offsets.Delete(base)
	inflight.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), base+"|") {
			inflight.Delete(k)
		}
		return true
	})
}
