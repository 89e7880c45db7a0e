package feeschedule

import (
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// TestBaseTiers checks each venue's base tier, for both kinds, against the published
// figure: asked for by name and by "".
func TestBaseTiers(t *testing.T) {
	tests := []struct {
		venue        Venue
		kind         exchange.Kind
		tier         string
		maker, taker string
	}{
		{Binance, exchange.Spot, "regular", "0.001", "0.001"},      // 0.1000 % / 0.1000 %
		{Binance, exchange.Futures, "regular", "0.0002", "0.0005"}, // 0.0200 % / 0.0500 %
		{Bybit, exchange.Spot, "vip0", "0.001", "0.001"},           // 0.1000 % / 0.1000 %
		{Bybit, exchange.Futures, "vip0", "0.0002", "0.00055"},     // 0.0200 % / 0.0550 %
		{OKX, exchange.Spot, "lv1", "0.0008", "0.001"},             // 0.080 % / 0.100 %
		{OKX, exchange.Futures, "lv1", "0.0002", "0.0005"},         // 0.020 % / 0.050 %
	}
	for _, tt := range tests {
		for _, tier := range []string{tt.tier, ""} {
			r, err := Lookup(tt.venue, tt.kind, tier)
			if err != nil {
				t.Fatalf("Lookup(%s, %s, %q): %v", tt.venue, tt.kind, tier, err)
			}
			if !r.Maker.Equal(dec(tt.maker)) || !r.Taker.Equal(dec(tt.taker)) {
				t.Errorf("Lookup(%s, %s, %q) = maker %s taker %s, want %s %s", tt.venue, tt.kind, tier, r.Maker, r.Taker, tt.maker, tt.taker)
			}
		}
		if got := Tiers(tt.venue)[0]; got != tt.tier {
			t.Errorf("Tiers(%s)[0] = %q, want the base tier %q", tt.venue, got, tt.tier)
		}
	}
}

// TestSomeTiers spot-checks tiers above the base, including a rebate.
func TestSomeTiers(t *testing.T) {
	tests := []struct {
		venue        Venue
		kind         exchange.Kind
		tier         string
		maker, taker string
	}{
		{Binance, exchange.Spot, "vip3", "0.00042", "0.0006"},
		{Binance, exchange.Futures, "vip9", "0", "0.00017"},
		{Bybit, exchange.Spot, "vip1", "0.000675", "0.0008"},
		{Bybit, exchange.Futures, "vip3", "0.00014", "0.00035"},
		{OKX, exchange.Spot, "vip6", "-0.00002", "0.00025"},
	}
	for _, tt := range tests {
		r, err := Lookup(tt.venue, tt.kind, tt.tier)
		if err != nil {
			t.Fatalf("Lookup(%s, %s, %q): %v", tt.venue, tt.kind, tt.tier, err)
		}
		if !r.Maker.Equal(dec(tt.maker)) || !r.Taker.Equal(dec(tt.taker)) {
			t.Errorf("Lookup(%s, %s, %q) = maker %s taker %s, want %s %s", tt.venue, tt.kind, tt.tier, r.Maker, r.Taker, tt.maker, tt.taker)
		}
	}
}

// TestTierNamesNormalized: the venue's printed spelling finds the tier.
func TestTierNamesNormalized(t *testing.T) {
	want, err := Lookup(Bybit, exchange.Spot, "vip1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range []string{"VIP 1", "Vip1", " vip-1 ", "vip_1"} {
		got, err := Lookup(Bybit, exchange.Spot, tier)
		if err != nil {
			t.Fatalf("Lookup(bybit, spot, %q): %v", tier, err)
		}
		if got != want {
			t.Errorf("Lookup(bybit, spot, %q) = %v, want %v", tier, got, want)
		}
	}
	if _, err := Lookup("Binance", exchange.Spot, "Regular"); err != nil {
		t.Errorf("Lookup(Binance, spot, Regular): %v", err)
	}
}

// TestTiersOrdered: for every venue and kind, the tiers that kind has come in Tiers'
// order, start with the base tier, and neither fee rises with the tier; every tier of a
// table is listed by Tiers, and every listed tier has rates for some kind.
func TestTiersOrdered(t *testing.T) {
	for _, v := range Venues() {
		tiers := Tiers(v)
		if len(tiers) == 0 {
			t.Fatalf("Tiers(%s) is empty", v)
		}
		seen := map[string]bool{}
		for _, s := range schedules {
			if s.venue != v {
				continue
			}
			for _, table := range []map[string]Rates{s.spot, s.futures} {
				for name := range table {
					if !slices.Contains(tiers, name) {
						t.Errorf("%s: tier %q has rates but is not in Tiers", v, name)
					}
					seen[name] = true
				}
			}
		}
		for _, name := range tiers {
			if !seen[name] {
				t.Errorf("%s: Tiers lists %q, which has no rates", v, name)
			}
		}
		for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
			var prev *Rates
			var prevName string
			n := 0
			for i, name := range tiers {
				r, err := Lookup(v, kind, name)
				if err != nil {
					if i == 0 {
						t.Errorf("%s %s: base tier %q: %v", v, kind, name, err)
					}
					continue
				}
				n++
				if prev != nil {
					if r.Maker.GreaterThan(prev.Maker) {
						t.Errorf("%s %s: %s maker %s > %s maker %s", v, kind, name, r.Maker, prevName, prev.Maker)
					}
					if r.Taker.GreaterThan(prev.Taker) {
						t.Errorf("%s %s: %s taker %s > %s taker %s", v, kind, name, r.Taker, prevName, prev.Taker)
					}
				}
				if r.Taker.Sign() <= 0 || r.Maker.GreaterThan(r.Taker) {
					t.Errorf("%s %s %s: maker %s taker %s, want 0 < taker and maker <= taker", v, kind, name, r.Maker, r.Taker)
				}
				prev, prevName = &r, name
			}
			if n < 1 {
				t.Errorf("%s %s: no tiers", v, kind)
			}
		}
	}
}

// TestMinimumTiers: the base tier and VIP 1-3 are there for every kind the sources
// confirmed them for (all but OKX futures, of which only the base tier is confirmed).
func TestMinimumTiers(t *testing.T) {
	for _, v := range Venues() {
		for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
			want := 4
			if v == OKX && kind == exchange.Futures {
				want = 1
			}
			for _, name := range Tiers(v)[:want] {
				if _, err := Lookup(v, kind, name); err != nil {
					t.Errorf("Lookup(%s, %s, %q): %v", v, kind, name, err)
				}
			}
		}
	}
}

func TestVenuesAndTiers(t *testing.T) {
	if got, want := Venues(), []Venue{Binance, Bybit, OKX}; !slices.Equal(got, want) {
		t.Errorf("Venues() = %v, want %v", got, want)
	}
	tests := map[Venue][]string{
		Binance: {"regular", "vip1", "vip2", "vip3", "vip4", "vip5", "vip6", "vip7", "vip8", "vip9"},
		Bybit:   {"vip0", "vip1", "vip2", "vip3", "vip4", "vip5"},
		OKX:     {"lv1", "vip1", "vip2", "vip3", "vip4", "vip5", "vip6", "vip7", "vip8"},
	}
	for v, want := range tests {
		if got := Tiers(v); !slices.Equal(got, want) {
			t.Errorf("Tiers(%s) = %v, want %v", v, got, want)
		}
	}
	if got := Tiers("kraken"); got != nil {
		t.Errorf("Tiers(kraken) = %v, want nil", got)
	}
	// The caller's slice is its own.
	Tiers(Binance)[0] = "changed"
	if Tiers(Binance)[0] != "regular" {
		t.Error("Tiers returned the package's own slice")
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name      string
		venue     Venue
		kind      exchange.Kind
		tier      string
		parameter string
		mention   []string // what the message must list
	}{
		{"unknown venue", "kraken", exchange.Spot, "", "venue", []string{"binance, bybit, okx", `"kraken"`}},
		{"empty venue", "", exchange.Spot, "", "venue", []string{"binance, bybit, okx"}},
		{"unknown kind", Binance, "options", "", "market", []string{"spot", "futures", `"options"`}},
		{"unknown tier", Binance, exchange.Spot, "vip12", "feeTier", []string{"regular, vip1, vip2, vip3", `"vip12"`}},
		{"other venue's tier", Bybit, exchange.Futures, "regular", "feeTier", []string{"vip0, vip1, vip2, vip3, vip4, vip5"}},
		{"tier without rates for the kind", OKX, exchange.Futures, "vip1", "feeTier", []string{"lv1 for okx futures", `"vip1"`}},
		{"spot tier not confirmed", Binance, exchange.Spot, "vip9", "feeTier", []string{"for binance spot"}},
		{"long input clipped", Binance, exchange.Spot, strings.Repeat("x", 100), "feeTier", []string{`"` + strings.Repeat("x", 32) + `"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Lookup(tt.venue, tt.kind, tt.tier)
			if err == nil {
				t.Fatalf("Lookup = %v, want an error", r)
			}
			e, ok := errs.As(err)
			if !ok {
				t.Fatalf("error %v (%T) is not an *errs.Error", err, err)
			}
			if e.Code != errs.InvalidParameter {
				t.Errorf("code = %s, want %s", e.Code, errs.InvalidParameter)
			}
			if got := e.Details["parameter"]; got != tt.parameter {
				t.Errorf("details parameter = %v, want %q", got, tt.parameter)
			}
			if !strings.HasPrefix(e.Message, tt.parameter+" ") {
				t.Errorf("message %q does not start with the parameter's name", e.Message)
			}
			for _, m := range tt.mention {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not mention %q", e.Message, m)
				}
			}
			if strings.Contains(e.Message, strings.Repeat("x", 33)) {
				t.Errorf("message %q is not clipped", e.Message)
			}
		})
	}
}
