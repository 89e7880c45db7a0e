// Package feeschedule holds the trading fee schedules that Binance, Bybit and OKX publish
// for spot and for USDT-margined perpetual futures: the maker and taker rate of each fee
// tier. It is the Strategy Lab's cost model, so that a backtest charges the fees of the
// venue and tier it is told to rather than one flat rate.
//
// Schedules change: the venues revise their tiers, run promotions and price some regions
// differently. The figures here are the standard rates as published when they were gathered
// (2026-12-07; schedules.go cites each table's sources and any date they state). They are
// a snapshot to be re-checked and updated by hand, not a live feed.
//
// Discounts are not modelled: Binance's BNB fee discount (spot 25 %, futures 10 %), OKX's
// OKB-holding tiers for regular users (its former Lv2 to Lv5), referral kickbacks and every
// promotion or market-maker programme are left out. A rate is the venue's standard rate
// for its tier (a negative maker rate in a venue's own schedule is kept: it is a rebate).
//
// The tables are hand-written because no maintained Go library carries the venues' fee
// schedules (ccxt's exchange descriptions hold a base rate per market type, tiers for a
// few, and several are out of date: in the copies read, its Binance USDⓈ-M taker is the
// former 0.04 % and its OKX spot rates are OKX's former 0.10 %/0.15 %), and the rates an
// account actually pays come from the venues' account endpoints (Binance's commission-rate
// endpoints, Bybit's /v5/account/fee-rate, OKX's /api/v5/account/trade-fee), which a
// backtest without credentials cannot read.
//
// Tier names are the venue's own, lower-cased with spaces dropped:
//
//   - binance: "regular" (Binance's regular users, the row some pages call VIP 0), then
//     "vip1" to "vip9" (spot only to "vip3");
//   - bybit: "vip0" (Bybit's "VIP 0", its non-VIP users), then "vip1" to "vip5";
//   - okx: "lv1" (OKX's regular users, "Lv1" as its account API names the level), then
//     "vip1" to "vip8" (futures only "lv1").
//
// Lookup accepts a tier in any case and with spaces, hyphens or underscores ("VIP 1",
// "vip_1"); the tier "" is the venue's base tier. Not every tier has rates for both market
// kinds: a table holds only the tiers its sources confirm (see schedules.go).
package feeschedule

import (
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Venue is an exchange whose fee schedule this package holds.
type Venue string

const (
	Binance Venue = "binance"
	Bybit   Venue = "bybit"
	OKX     Venue = "okx"
)

// Rates are a tier's maker and taker fee rates, as fractions of the notional (0.0002 is
// 0.02 %). A negative Maker is a rebate paid to the maker.
type Rates struct {
	Maker, Taker decimal.Decimal
}

// Venues returns the venues this package holds schedules for, in a fixed order.
func Venues() []Venue {
	out := make([]Venue, len(schedules))
	for i, s := range schedules {
		out[i] = s.venue
	}
	return out
}

// Tiers returns a venue's tier names in order, base tier first, or nil for an unknown
// venue. It lists every tier that has rates for at least one market kind; Lookup says, for
// a tier that a kind lacks, which tiers that kind has.
func Tiers(v Venue) []string {
	s, ok := find(v)
	if !ok {
		return nil
	}
	return slices.Clone(s.tiers)
}

// Lookup returns the rates of a venue's tier for a market kind (exchange.Spot or
// exchange.Futures, the venue's USDT-margined perpetuals); tier "" is the venue's base
// tier. An unknown venue, market kind or tier is an *errs.Error with code
// INVALID_PARAMETER whose details name the parameter ("venue", "market" or "feeTier") and
// whose message lists the valid values.
func Lookup(v Venue, kind exchange.Kind, tier string) (Rates, error) {
	s, ok := find(v)
	if !ok {
		return Rates{}, invalid("venue", "must be one of %s (got %q)", strings.Join(venueNames(), ", "), clip(string(v)))
	}
	var table map[string]Rates
	switch kind {
	case exchange.Spot:
		table = s.spot
	case exchange.Futures:
		table = s.futures
	default:
		return Rates{}, invalid("market", "must be %s or %s (got %q)", exchange.Spot, exchange.Futures, clip(string(kind)))
	}
	name := normalize(tier)
	if name == "" {
		name = s.tiers[0]
	}
	r, ok := table[name]
	if !ok {
		var valid []string
		for _, t := range s.tiers {
			if _, ok := table[t]; ok {
				valid = append(valid, t)
			}
		}
		return Rates{}, invalid("feeTier", "must be one of %s for %s %s (got %q)", strings.Join(valid, ", "), s.venue, kind, clip(tier))
	}
	return r, nil
}

// schedule is one venue's published rates.
type schedule struct {
	venue Venue
	// tiers is every tier name in the venue's order, base first.
	tiers []string
	// spot and futures map a tier name to its rates; a tier missing from one is a tier
	// whose rates for that kind could not be confirmed.
	spot, futures map[string]Rates
}

func find(v Venue) (*schedule, bool) {
	name := VenueName(v)
	for i := range schedules {
		if schedules[i].venue == name {
			return &schedules[i], true
		}
	}
	return nil, false
}

func venueNames() []string {
	out := make([]string, len(schedules))
	for i, s := range schedules {
		out[i] = string(s.venue)
	}
	return out
}

// TierName is tier as Lookup reads it ("VIP 1" is "vip1"): what a caller stores so that
// the tier it shows is the schedule's own name.
func TierName(tier string) string { return normalize(tier) }

// VenueName is v as Lookup reads it (" Binance" is "binance").
func VenueName(v Venue) Venue { return Venue(strings.ToLower(strings.TrimSpace(string(v)))) }

// normalize lower-cases a tier name and drops spaces, hyphens and underscores.
func normalize(tier string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '-', '_':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(tier)))
}

func invalid(name, format string, args ...any) *errs.Error {
	return errs.New(errs.InvalidParameter, name+" "+format, args...).WithDetails(map[string]any{"parameter": name})
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32]
	}
	return s
}
