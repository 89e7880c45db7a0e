package signal

import (
	"maps"
	"slices"
	"strings"

	"github.com/sigops/sigops/runtime/errs"
)

// Symbols resolves the symbol forms senders use to the canonical BASE/QUOTE of one market
// list. Splitting BASEQUOTE needs the list: "BTCUSDT" could only be cut by knowing that
// BTC/USDT exists.
type Symbols struct {
	compact map[string]string // "BTCUSDT" -> "BTC/USDT"
}

// separators are the symbol separators Resolve drops (a Replacer is safe for concurrent use).
var separators = strings.NewReplacer("/", "", "-", "", "_", "")

// NewSymbols indexes canonical BASE/QUOTE symbols.
func NewSymbols(canonical []string) *Symbols {
	s := &Symbols{compact: make(map[string]string, len(canonical))}
	for _, c := range canonical {
		base, quote, ok := strings.Cut(c, "/")
		if !ok {
			continue
		}
		s.compact[base+quote] = c
	}
	return s
}

// Resolve accepts BTCUSDT, BTC/USDT, btc-usdt, BTC_USDT, TradingView's BINANCE:BTCUSDT
// exchange prefix, the .P / PERP perpetual suffixes and CCXT's BTC/USDT:USDT perpetual form
// (settle currency after the colon), in any case, and returns BTC/USDT. An unknown or
// malformed symbol is INVALID_SYMBOL.
func (s *Symbols) Resolve(raw string) (string, error) {
	sym := strings.ToUpper(strings.TrimSpace(raw))
	// A colon after a BASE/QUOTE pair starts CCXT's settle currency; any other colon ends an
	// exchange prefix.
	if i := strings.LastIndexByte(sym, ':'); i >= 0 && strings.IndexByte(sym[:i], '/') >= 0 {
		sym = sym[:i]
	}
	if i := strings.LastIndexByte(sym, ':'); i >= 0 {
		sym = sym[i+1:]
	}
	sym = strings.TrimSuffix(sym, ".P")
	for _, suffix := range []string{"-PERP", "_PERP", "PERP"} {
		if strings.HasSuffix(sym, suffix) && len(sym) > len(suffix) {
			sym = strings.TrimSuffix(sym, suffix)
			break
		}
	}
	compact := separators.Replace(sym)
	if compact == "" {
		return "", errs.New(errs.InvalidSymbol, "empty symbol")
	}
	canonical, ok := s.compact[compact]
	if !ok {
		return "", errs.New(errs.InvalidSymbol, "unknown symbol %q", clip(raw, 32))
	}
	// With an explicit separator the split must match the market's (no "BT/CUSDT").
	if sep := strings.IndexAny(sym, "/-_"); sep >= 0 && sym[:sep] != canonical[:strings.IndexByte(canonical, '/')] {
		return "", errs.New(errs.InvalidSymbol, "unknown symbol %q", clip(raw, 32))
	}
	return canonical, nil
}

// List is the canonical symbols indexed, sorted.
func (s *Symbols) List() []string {
	out := slices.Collect(maps.Values(s.compact))
	slices.Sort(out)
	return out
}

// Len is the number of symbols indexed.
func (s *Symbols) Len() int { return len(s.compact) }
