package backtest

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
)

// Series is a candle series in the columnar, integer form the loop reads: prices in ticks of
// the market's tick size, and the strategy's float64 view of each candle (strategy.BarOf,
// the conversion the live runner makes). Built once, it is only read afterwards, so any
// number of Runs share it concurrently.
type Series struct {
	market    exchange.MarketInfo
	timeframe string
	tfMs      int64
	ts        []int64 // open time, ms
	open      []int64 // ticks
	high      []int64
	low       []int64
	close     []int64
	// vol is each candle's base volume × 10^dV, exactly, dV being the most decimals a
	// volume has: the integer ledger's slippage reads it without following a pointer. When
	// a volume cannot be held so, volume holds them all as given (nil otherwise). Only a
	// fill with slippage reads either.
	vol    []int64
	dV     int
	volume []decimal.Decimal
	bars   []strategy.Bar
}

// NewSeries converts candles (oldest first, open times strictly increasing) of market m and
// timeframe. Every price must be a positive multiple of m.TickSize, and each candle's high
// and low must contain its open and close. Gaps (missing candles) are kept as they are: the
// strategy sees the candles it is given, in order, as the live runner sees an exchange's.
func NewSeries(candles []marketdata.Candle, m exchange.MarketInfo, timeframe string) (*Series, error) {
	d, err := marketdata.TimeframeDuration(timeframe)
	if err != nil {
		return nil, errs.Wrap(err, errs.InvalidParameter, "timeframe %q is not one of %s", timeframe, strings.Join(marketdata.Timeframes(), ", "))
	}
	if !m.TickSize.IsPositive() {
		return nil, errs.New(errs.InvalidParameter, "market %s has no tick size", m.Symbol)
	}
	if len(candles) == 0 {
		return nil, errs.New(errs.InvalidParameter, "candles: the series is empty")
	}
	n := len(candles)
	s := &Series{market: m, timeframe: timeframe, tfMs: d.Milliseconds(),
		ts: make([]int64, n), open: make([]int64, n), high: make([]int64, n), low: make([]int64, n),
		close: make([]int64, n), bars: make([]strategy.Bar, n)}
	for i, c := range candles {
		if i > 0 && c.Timestamp <= candles[i-1].Timestamp {
			return nil, errs.New(errs.InvalidParameter, "candles: candle %d opens at %d, not after the previous one (%d)", i, c.Timestamp, candles[i-1].Timestamp)
		}
		s.ts[i] = c.Timestamp
		for _, f := range [...]struct {
			name string
			v    decimal.Decimal
			dst  *int64
		}{{"open", c.Open, &s.open[i]}, {"high", c.High, &s.high[i]}, {"low", c.Low, &s.low[i]}, {"close", c.Close, &s.close[i]}} {
			t, err := ticks(f.v, m.TickSize)
			if err != nil {
				return nil, errs.New(errs.InvalidParameter, "candles: candle %d's %s %s: %v", i, f.name, f.v, err)
			}
			*f.dst = t
		}
		if s.low[i] > min(s.open[i], s.close[i]) || s.high[i] < max(s.open[i], s.close[i]) {
			return nil, errs.New(errs.InvalidParameter, "candles: candle %d's high %s and low %s do not contain its open and close", i, c.High, c.Low)
		}
		s.bars[i] = strategy.BarOf(c)
	}
	s.volumes(candles)
	return s, nil
}

// volumes sets the volume columns from cs.
func (s *Series) volumes(cs []marketdata.Candle) {
	for _, c := range cs {
		s.dV = max(s.dV, int(-c.Volume.Exponent()))
	}
	vol := make([]int64, len(cs))
	for i, c := range cs {
		d := s.dV + int(c.Volume.Exponent())
		if s.dV > 18 || c.Volume.NumDigits()+d > 18 {
			// Beyond int64: the decimals as given.
			s.dV, s.volume = 0, make([]decimal.Decimal, len(cs))
			for i, c := range cs {
				s.volume[i] = c.Volume
			}
			return
		}
		vol[i] = c.Volume.CoefficientInt64() * int64(pow10[d])
	}
	s.vol = vol
}

// volumeAt is candle i's volume.
func (s *Series) volumeAt(i int) decimal.Decimal {
	if s.volume != nil {
		return s.volume[i]
	}
	return decimal.New(s.vol[i], int32(-s.dV))
}

var maxTicks = decimal.NewFromInt(1 << 62)

// ticks is price / tick, which must be a positive whole number. A tick that is a power of
// ten (every paper market's) only moves the decimal point, which is several times cheaper
// than the division.
func ticks(price, tick decimal.Decimal) (int64, error) {
	if !price.IsPositive() {
		return 0, errors.New("is not positive")
	}
	if e := tick.Exponent(); tick.Equal(decimal.New(1, e)) {
		q := price.Shift(-e)
		if !q.IsInteger() {
			return 0, fmt.Errorf("is not a multiple of the tick %s", tick)
		}
		if q.GreaterThan(maxTicks) {
			return 0, errors.New("is too many ticks")
		}
		return q.IntPart(), nil
	}
	if !price.Mod(tick).IsZero() {
		return 0, fmt.Errorf("is not a multiple of the tick %s", tick)
	}
	q := price.Div(tick)
	if q.GreaterThan(maxTicks) {
		return 0, errors.New("is too many ticks")
	}
	return q.IntPart(), nil
}

// Slice is the candles [lo, hi) of s as a series of their own, sharing s's columns (no
// copy): a run on it reads nothing outside them. It panics when the bounds are not
// 0 <= lo < hi <= Len, as slicing does.
func (s *Series) Slice(lo, hi int) *Series {
	if lo < 0 || hi > len(s.ts) || lo >= hi {
		panic(fmt.Sprintf("backtest: Slice(%d, %d) of a series of %d candles", lo, hi, len(s.ts)))
	}
	c := *s
	c.ts, c.open, c.high, c.low, c.close, c.bars = s.ts[lo:hi:hi], s.open[lo:hi:hi], s.high[lo:hi:hi],
		s.low[lo:hi:hi], s.close[lo:hi:hi], s.bars[lo:hi:hi]
	if s.volume != nil {
		c.volume = s.volume[lo:hi:hi]
	} else {
		c.vol = s.vol[lo:hi:hi]
	}
	return &c
}

// IndexOf is the index of the first candle opening at or after ms (Len when none does).
func (s *Series) IndexOf(ms int64) int {
	i, _ := slices.BinarySearch(s.ts, ms)
	return i
}

// OpenTime is candle i's open time (ms).
func (s *Series) OpenTime(i int) int64 { return s.ts[i] }

// EndTime is candle i's close time (ms): its open time plus the timeframe.
func (s *Series) EndTime(i int) int64 { return s.ts[i] + s.tfMs }

// Len is the number of candles.
func (s *Series) Len() int { return len(s.ts) }

// Market is the series' market.
func (s *Series) Market() exchange.MarketInfo { return s.market }

// Timeframe is the series' timeframe.
func (s *Series) Timeframe() string { return s.timeframe }

// price is t ticks as a price.
func (s *Series) price(t int64) decimal.Decimal { return decimal.New(t, 0).Mul(s.market.TickSize) }

// csvHeader is the first line of a candle file.
const csvHeader = "timestamp,open,high,low,close,volume"

// ReadCSV reads candles from CSV with the header timestamp,open,high,low,close,volume
// (timestamp: the open time in ms; numbers as exact decimals).
func ReadCSV(r io.Reader) ([]marketdata.Candle, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.FieldsPerRecord = 6
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("candles CSV: header: %w", err)
	}
	if strings.Join(head, ",") != csvHeader {
		return nil, fmt.Errorf("candles CSV: header %q, want %q", strings.Join(head, ","), csvHeader)
	}
	var out []marketdata.Candle
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("candles CSV: %w", err)
		}
		ts, err := strconv.ParseInt(rec[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("candles CSV: line %d: timestamp %q: %w", line, rec[0], err)
		}
		c := marketdata.Candle{Timestamp: ts, Time: ts / 1000}
		for j, dst := range [...]*decimal.Decimal{&c.Open, &c.High, &c.Low, &c.Close, &c.Volume} {
			if *dst, err = decimal.NewFromString(rec[j+1]); err != nil {
				return nil, fmt.Errorf("candles CSV: line %d: %s %q: %w", line, strings.Split(csvHeader, ",")[j+1], rec[j+1], err)
			}
		}
		out = append(out, c)
	}
}

// fundingHeader is the first line of a funding file.
const fundingHeader = "time,rate"

// ReadFundingCSV reads funding settlements (Costs.Funding) from CSV with the header
// time,rate (time: the settlement's time in ms; rate: an exact decimal, positive when the
// longs pay).
func ReadFundingCSV(r io.Reader) ([]marketdata.FundingRate, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = 2
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("funding CSV: header: %w", err)
	}
	if strings.Join(head, ",") != fundingHeader {
		return nil, fmt.Errorf("funding CSV: header %q, want %q", strings.Join(head, ","), fundingHeader)
	}
	var out []marketdata.FundingRate
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("funding CSV: %w", err)
		}
		var f marketdata.FundingRate
		if f.Time, err = strconv.ParseInt(rec[0], 10, 64); err != nil {
			return nil, fmt.Errorf("funding CSV: line %d: time %q: %w", line, rec[0], err)
		}
		if f.Rate, err = decimal.NewFromString(rec[1]); err != nil {
			return nil, fmt.Errorf("funding CSV: line %d: rate %q: %w", line, rec[1], err)
		}
		out = append(out, f)
	}
}

// WriteCSV writes candles as ReadCSV reads them.
func WriteCSV(w io.Writer, cs []marketdata.Candle) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(csvHeader + "\n")
	b := make([]byte, 0, 128)
	for _, c := range cs {
		b = strconv.AppendInt(b[:0], c.Timestamp, 10)
		for _, v := range [...]decimal.Decimal{c.Open, c.High, c.Low, c.Close, c.Volume} {
			b = append(b, ',')
			b = append(b, v.String()...)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
