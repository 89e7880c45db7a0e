package dashboard

import (
	"strconv"
	"strings"

	"github.com/sigops/sigops/runtime/analytics"
)

// The equity curve is drawn on the server as an inline SVG (no chart library on the first
// page: it must stay light). Its coordinates are float64 for drawing only; every figure
// shown as text is the decimal.
const (
	curveWidth  = 600
	curveHeight = 160
	curvePad    = 4
)

// curveChart is the SVG of an equity curve: its viewBox and the d attributes of the line
// and of the area under it. Empty Line: fewer than two points, nothing to draw.
type curveChart struct {
	ViewBox    string
	Line, Area string
	// Low and High are the lowest and highest equity drawn (the axis' ends).
	Low, High analytics.Point
}

// chartOf scales points into the viewBox: time along x, equity along y (higher up).
func chartOf(points []analytics.Point) curveChart {
	c := curveChart{ViewBox: "0 0 " + strconv.Itoa(curveWidth) + " " + strconv.Itoa(curveHeight)}
	if len(points) < 2 {
		return c
	}
	c.Low, c.High = points[0], points[0]
	for _, p := range points[1:] {
		if p.Equity.LessThan(c.Low.Equity.Decimal) {
			c.Low = p
		}
		if p.Equity.GreaterThan(c.High.Equity.Decimal) {
			c.High = p
		}
	}
	t0, t1 := float64(points[0].Timestamp), float64(points[len(points)-1].Timestamp)
	lo, hi := c.Low.Equity.InexactFloat64(), c.High.Equity.InexactFloat64()
	var line strings.Builder
	for i, p := range points {
		x := 0.0
		if t1 > t0 {
			x = (float64(p.Timestamp) - t0) / (t1 - t0) * curveWidth
		}
		y := curveHeight / 2.0
		if hi > lo {
			y = curvePad + (hi-p.Equity.InexactFloat64())/(hi-lo)*(curveHeight-2*curvePad)
		}
		if i == 0 {
			line.WriteString("M")
		} else {
			line.WriteString(" L")
		}
		line.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	c.Line = line.String()
	c.Area = c.Line + " L" + strconv.Itoa(curveWidth) + "," + strconv.Itoa(curveHeight) + " L0," + strconv.Itoa(curveHeight) + " Z"
	return c
}
