package marketdata

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// FundingRate is one funding settlement of a perpetual futures contract: at Time (Unix ms)
// a long position pays Rate × its notional to the shorts (a negative rate: the shorts pay).
type FundingRate struct {
	Time int64
	Rate decimal.Decimal
}

// FundingHistory is a source of past funding settlements (the Strategy Lab's cost model).
type FundingHistory interface {
	// FundingBetween returns the funding settlements of symbol's perpetual contract whose
	// time is in [from, to), oldest first, without repeats.
	FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error)
}

// The types HistoryFromFlag returns are funding histories too.
var (
	_ FundingHistory = (*Simulated)(nil)
	_ FundingHistory = (*BinancePublic)(nil)
	_ FundingHistory = (*BybitPublic)(nil)
	_ FundingHistory = (*OKXPublic)(nil)
)

// MaxFundingPeriod bounds one FundingBetween (about ten years); a longer period is refused
// with INVALID_PARAMETER before anything is fetched.
const MaxFundingPeriod = 3660 * 24 * time.Hour

// maxFundingRates is how many settlements MaxFundingPeriod holds at one an hour, the
// shortest funding interval the venues set (8 hours is the usual one: 10,980 settlements).
const maxFundingRates = int(MaxFundingPeriod / time.Hour)

// fundingPages bounds the requests of one FundingBetween to a venue answering at most page
// settlements a request: enough for maxFundingRates, and a stop for a venue whose pages do
// not advance.
func fundingPages(page int) int { return maxFundingRates/page + 2 }

func tooManyFundingPages(venue string, pages int) error {
	return errs.New(errs.ExchangeError, "%s: funding pages did not advance within %d requests", venue, pages)
}

// fundingBounds validates a period and returns it in Unix ms: settlements at first or later
// and before end are in [from, to) (both rounded up to the millisecond).
func fundingBounds(from, to time.Time) (first, end int64, err error) {
	if !to.After(from) {
		return 0, 0, errs.New(errs.InvalidParameter, "the period's end %s is not after its start %s",
			to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	if from.Before(time.UnixMilli(0)) {
		return 0, 0, errs.New(errs.InvalidParameter, "the period starts before 1970")
	}
	if to.Sub(from) > MaxFundingPeriod {
		return 0, 0, errs.New(errs.InvalidParameter, "the period lasts %s; funding is read for at most %s",
			to.Sub(from).Round(time.Hour), MaxFundingPeriod).WithDetails(map[string]any{"maxHours": MaxFundingPeriod.Hours()})
	}
	return ceilMs(from), ceilMs(to), nil
}

// ceilMs is t in Unix ms, rounded up.
func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli() // rounded down
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// tidyFunding sorts settlements by time, drops repeats and keeps those in [first, end).
func tidyFunding(rs []FundingRate, first, end int64) []FundingRate {
	slices.SortStableFunc(rs, func(a, b FundingRate) int { return cmpInt(a.Time, b.Time) })
	out := rs[:0]
	for _, r := range rs {
		if r.Time < first || r.Time >= end || len(out) > 0 && out[len(out)-1].Time == r.Time {
			continue
		}
		out = append(out, r)
	}
	return out
}

// fundingOf reads one settlement as the venues write it: the time in Unix ms and the rate as
// a decimal string, parsed exactly.
func fundingOf(ms int64, rate string) (FundingRate, error) {
	r, err := decimal.NewFromString(rate)
	if err != nil {
		return FundingRate{}, fmt.Errorf("rate %q: %w", clip(rate, 40), err)
	}
	return FundingRate{Time: ms, Rate: r}, nil
}

// fundingOfStrings reads a settlement whose time is a string of digits (Bybit's, OKX's).
func fundingOfStrings(ms, rate string) (FundingRate, error) {
	t, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return FundingRate{}, fmt.Errorf("time %q: %w", clip(ms, 40), err)
	}
	return fundingOf(t, rate)
}

// The simulated market's funding (see Simulated.FundingBetween).
const (
	// SimulatedFundingInterval is the simulated market's funding interval: settlements at
	// 00:00, 08:00 and 16:00 UTC.
	SimulatedFundingInterval = 8 * time.Hour
	simFundingBase           = 0.0001  // 0.01 % per 8 h, the venues' usual resting rate
	simFundingDriftWeight    = 0.01    // rate per unit of the interval's log return
	simFundingCap            = 750_000 // ±0.0075 (±0.75 %), in units of 1e-8
)

// FundingBetween computes the simulated perpetual's settlements in [from, to) that are not
// after the market's now. It reads the price path only (pins are ignored), so it is a pure
// function of the options, the symbol and the time: every call on every replica gives the
// same rates.
//
// Model: a settlement every SimulatedFundingInterval at 00:00, 08:00 and 16:00 UTC. The rate
// at T is 0.0001 (0.01 %, the venues' usual resting rate) plus 0.01 × the log return of
// the simulated price over the interval ending at T, so longs pay more after a rise and less
// (or are paid) after a fall, as a perpetual's premium follows the market; it is clamped to
// ±0.0075 (±0.75 %, the common venue cap) and rounded half away from zero to 8 decimal
// places, as venues publish it. With the default 3 % daily volatility an interval's log
// return has a standard deviation of about 1.7 %, so rates mostly lie within 0.0001 ±
// 0.0002. Spot and futures share the path, so there is no basis beyond the rate itself.
func (s *Simulated) FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error) {
	first, end, err := fundingBounds(from, to)
	if err != nil {
		return nil, err
	}
	sym, err := s.lookup(exchange.Futures, symbol)
	if err != nil {
		return nil, err
	}
	d := SimulatedFundingInterval.Milliseconds()
	first = floorDiv(first+d-1, d) * d                  // the first settlement at or after from
	end = min(end, floorDiv(s.now().UnixNano(), 1e6)+1) // and none after now
	if first >= end {
		return nil, nil
	}
	out := make([]FundingRate, 0, (end-first+d-1)/d)
	var p path
	p.salt = sym.salt
	prev := s.logAt(&p, sym, s.tickIndex((first-d)*1e6))
	for t := first; t < end; t += d {
		if len(out)%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x := s.logAt(&p, sym, s.tickIndex(t*1e6))
		out = append(out, FundingRate{Time: t, Rate: simFundingRate(x - prev)})
		prev = x
	}
	return out, nil
}

// simFundingRate is the model's rate for an interval whose log return is r.
func simFundingRate(r float64) decimal.Decimal {
	// The explicit conversion rounds the product before the sum, so no machine fuses them
	// into one multiply-add: the same bits everywhere.
	drift := float64(simFundingDriftWeight * r)
	n := math.Round((simFundingBase + drift) * 1e8)
	n = max(-simFundingCap, min(simFundingCap, n))
	return decimal.New(int64(n), -8)
}

// binanceFundingPage is the most settlements /fapi/v1/fundingRate answers a request: its
// limit is "Default 100; max 1000".
const binanceFundingPage = 1000

// FundingBetween pages through Binance's USDⓈ-M funding history (GET /fapi/v1/fundingRate)
// forward from the period's start, 1000 a request. Binance answers in ascending order and,
// when more than limit settlements lie between startTime and endTime (both inclusive, in
// ms), the first limit from startTime; the next page starts after the last settlement.
func (b *BinancePublic) FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error) {
	first, end, err := fundingBounds(from, to)
	if err != nil {
		return nil, err
	}
	pair, err := binancePair(exchange.Futures, symbol)
	if err != nil {
		return nil, err
	}
	var all []FundingRate
	for start, page := first, 0; start < end; page++ {
		if page == fundingPages(binanceFundingPage) {
			return nil, tooManyFundingPages("binance", page)
		}
		// fundingTime is a number (LONG, ms); fundingRate and markPrice are decimal strings.
		var rows []struct {
			Symbol      string `json:"symbol"`
			FundingTime int64  `json:"fundingTime"`
			FundingRate string `json:"fundingRate"`
		}
		q := url.Values{"symbol": {pair}, "startTime": {strconv.FormatInt(start, 10)},
			"endTime": {strconv.FormatInt(end-1, 10)}, "limit": {strconv.Itoa(binanceFundingPage)}}
		if err := b.get(ctx, exchange.Futures, symbol, "fundingRate", q, &rows); err != nil {
			return nil, err
		}
		newest := start
		for i, row := range rows {
			r, err := fundingOf(row.FundingTime, row.FundingRate)
			if err == nil && row.Symbol != pair {
				err = fmt.Errorf("symbol %q", clip(row.Symbol, 20))
			}
			if err != nil {
				return nil, errs.Wrap(err, errs.ExchangeError, "binance: malformed funding rate %d for %s", i, pair)
			}
			all = append(all, r)
			newest = max(newest, r.Time)
		}
		if len(rows) < binanceFundingPage {
			break
		}
		start = newest + 1
	}
	return tidyFunding(all, first, end), nil
}

// bybitFundingPage is the most settlements /v5/market/funding/history answers a request:
// its limit is "[1, 200]. Default: 200".
const bybitFundingPage = 200

// FundingBetween pages through Bybit's linear funding history (GET
// /v5/market/funding/history, category linear) backward from the period's end, 200 a
// request. Bybit answers newest first, up to endTime; startTime is always sent with endTime
// (Bybit refuses startTime alone), both in ms; the next page ends before the oldest
// settlement so far.
func (b *BybitPublic) FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error) {
	first, end, err := fundingBounds(from, to)
	if err != nil {
		return nil, err
	}
	pair, err := binancePair(exchange.Futures, symbol) // BTCUSDT, "uppercase only"
	if err != nil {
		return nil, err
	}
	var all []FundingRate
	for last, page := end-1, 0; last >= first; page++ {
		if page == fundingPages(bybitFundingPage) {
			return nil, tooManyFundingPages("bybit", page)
		}
		// Every field is a string: fundingRateTimestamp holds ms.
		var res struct {
			List []struct {
				Symbol               string `json:"symbol"`
				FundingRate          string `json:"fundingRate"`
				FundingRateTimestamp string `json:"fundingRateTimestamp"`
			} `json:"list"`
		}
		q := url.Values{"symbol": {pair}, "startTime": {strconv.FormatInt(first, 10)},
			"endTime": {strconv.FormatInt(last, 10)}, "limit": {strconv.Itoa(bybitFundingPage)}}
		if err := b.get(ctx, exchange.Futures, symbol, "funding/history", q, &res); err != nil {
			return nil, err
		}
		oldest := last
		for i, row := range res.List {
			r, err := fundingOfStrings(row.FundingRateTimestamp, row.FundingRate)
			if err == nil && row.Symbol != pair {
				err = fmt.Errorf("symbol %q", clip(row.Symbol, 20))
			}
			if err != nil {
				return nil, errs.Wrap(err, errs.ExchangeError, "bybit: malformed funding rate %d for %s", i, pair)
			}
			all = append(all, r)
			oldest = min(oldest, r.Time)
		}
		if len(res.List) < bybitFundingPage {
			break
		}
		last = oldest - 1
	}
	return tidyFunding(all, first, end), nil
}

// okxFundingPage is the most settlements /api/v5/public/funding-rate-history answers a
// request: its limit's "maximum is 100; the default is 100".
const okxFundingPage = 100

// okxFundingRow is one of OKX's funding settlements: every field a string, fundingTime in
// ms. fundingRate is the rate predicted for the settlement, realizedRate the one applied.
type okxFundingRow struct {
	InstID       string `json:"instId"`
	FundingRate  string `json:"fundingRate"`
	RealizedRate string `json:"realizedRate"`
	FundingTime  string `json:"fundingTime"`
}

// FundingBetween pages through OKX's swap funding history (GET
// /api/v5/public/funding-rate-history, instId BASE-QUOTE-SWAP) backward from the period's
// end, 100 a request: OKX answers newest first, and after returns the settlements earlier
// than the given fundingTime (ms), so after is the period's end, then the oldest settlement
// so far. The rate is realizedRate, the one applied (fundingRate when OKX leaves it empty).
// OKX keeps about three months: older settlements are not in the answer.
func (o *OKXPublic) FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error) {
	first, end, err := fundingBounds(from, to)
	if err != nil {
		return nil, err
	}
	inst, err := okxInstID(exchange.Futures, symbol)
	if err != nil {
		return nil, err
	}
	var all []FundingRate
	for after, page := end, 0; after > first; page++ {
		if page == fundingPages(okxFundingPage) {
			return nil, tooManyFundingPages("okx", page)
		}
		var rows []okxFundingRow
		q := url.Values{"instId": {inst}, "after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(okxFundingPage)}}
		if err := o.get(ctx, exchange.Futures, symbol, "public/funding-rate-history", q, &rows); err != nil {
			return nil, err
		}
		oldest := after
		for i, row := range rows {
			rate := row.RealizedRate
			if rate == "" {
				rate = row.FundingRate
			}
			r, err := fundingOfStrings(row.FundingTime, rate)
			if err == nil && row.InstID != inst {
				err = fmt.Errorf("instId %q", clip(row.InstID, 30))
			}
			if err != nil {
				return nil, errs.Wrap(err, errs.ExchangeError, "okx: malformed funding rate %d for %s", i, inst)
			}
			all = append(all, r)
			oldest = min(oldest, r.Time)
		}
		if len(rows) < okxFundingPage {
			break
		}
		if oldest >= after {
			return nil, errs.New(errs.ExchangeError, "okx: funding pages did not advance")
		}
		after = oldest
	}
	out := tidyFunding(all, first, end)
	// OKX keeps about three months of funding: an older period comes back without its
	// oldest settlements, which would charge a backtest too little funding. Settlements
	// come at most okxFundingGap apart, so a first one later than that after the period's
	// start means the history stops there.
	oldest := end
	if len(out) > 0 {
		oldest = out[0].Time
	}
	if oldest-first > okxFundingGap.Milliseconds() {
		return nil, errs.New(errs.ExchangeError, "okx: funding history for %s starts at %s, after the period's start %s: OKX keeps about three months; use a later period or turn funding off",
			inst, time.UnixMilli(oldest).UTC().Format(time.RFC3339), time.UnixMilli(first).UTC().Format(time.RFC3339))
	}
	return out, nil
}

// okxFundingGap is the longest interval between two OKX funding settlements (8 hours on
// USDT perpetuals; some settle every 4 or 1).
const okxFundingGap = 8 * time.Hour
