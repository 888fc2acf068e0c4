package simcli

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/yaoki-go/yaoki/sim"
)

// palette is Okabe and Ito's set of colours that colour-blind readers can
// tell apart (without the yellow, too pale on white). yaoki's own policy is
// drawn in black, thicker, so it stands out.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xff}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xff}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	color.RGBA{0x88, 0x88, 0x88, 0xff}, // grey
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}

// glyphs give each policy its own marker shape, so that lines lying on top
// of each other stay apart.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.CrossGlyph{}, draw.PlusGlyph{}, draw.BoxGlyph{}, draw.RingGlyph{}}

// refPoint is a published figure, drawn as a large ring in its policy's
// colour on the plot it belongs to.
type refPoint struct {
	x, y  float64
	style int // the policy's index: its colour
}

// series is one line of a plot.
type series struct {
	name   string
	xs, ys []float64
	style  int // index of the policy: its colour
	dash   int // index of a second dimension (client count, width): its dash
	yaoki  bool
}

// figure is one plot, saved as SVG and PNG.
type figure struct {
	file, title, x, y string
	params            string // the scenario's parameters, a second line under the title
	caption           string
	refs              []refPoint
	refName           string // the legend of refs
	logY              bool
	xMin, xMax        float64 // NaN: automatic
	yMin, yMax        float64
	lines             []series
	band              [2]float64 // an x range to shade (the trigger), if band[1] > band[0]
	bandName          string     // its legend; "": "trigger"
	hline             float64    // a level to mark with a dashed grey line, if > 0
	hlineName         string
}

func newFigure(file, title, x, y string) *figure {
	return &figure{file: file, title: title, x: x, y: y, xMin: math.NaN(), xMax: math.NaN(), yMin: math.NaN(), yMax: math.NaN()}
}

// render draws the figure and writes file.svg and file.png into dir.
func (f *figure) render(dir string) error {
	p := plot.New()
	p.Title.Text = f.title
	if f.params != "" {
		// One line per clause, so that the title fits above the plot.
		p.Title.Text += "\n" + strings.ReplaceAll(f.params, "; ", "\n")
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = f.x
	p.Y.Label.Text = f.y
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	legend := plot.NewLegend()
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(2)
	p.X.Tick.Marker = plot.TickerFunc(linearTicks)
	p.Y.Tick.Marker = plot.TickerFunc(linearTicks)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{0xe4}
	grid.Horizontal.Color = color.Gray{0xe4}
	p.Add(grid)
	if f.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(logTicks)
	}
	if f.band[1] > f.band[0] {
		lo, hi := f.yRange()
		if f.logY {
			lo = math.Max(lo, 1e-3)
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: f.band[0], Y: lo}, {X: f.band[1], Y: lo}, {X: f.band[1], Y: hi}, {X: f.band[0], Y: hi}})
		if err != nil {
			return err
		}
		poly.Color = color.RGBA{0xff, 0xe0, 0xb0, 0xff}
		poly.LineStyle.Width = 0
		p.Add(poly)
		name := f.bandName
		if name == "" {
			name = "trigger"
		}
		legend.Add(name, poly)
	}
	if f.hline > 0 && len(f.lines) > 0 && len(f.lines[0].xs) > 0 {
		xs := f.lines[0].xs
		l, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: f.hline}, {X: xs[len(xs)-1], Y: f.hline}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{0x70}
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		legend.Add(f.hlineName, l)
	}
	var top []plot.Plotter // yaoki's lines, drawn last: on top of the others
	for _, s := range f.lines {
		pts := make(plotter.XYs, 0, len(s.xs))
		for i := range s.xs {
			y := s.ys[i]
			if math.IsNaN(y) || f.logY && y <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: s.xs[i], Y: y})
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		c := palette[s.style%len(palette)]
		line.Color = c
		line.Width = vg.Points(1.6)
		if s.yaoki {
			line.Color = color.Black
			line.Width = vg.Points(2.6)
		}
		line.Dashes = dashes[s.dash%len(dashes)]
		// Markers: on every point of a short series; on a long one, on
		// every step-th point, shifted by policy so that the markers of
		// lines on top of each other do not hide one another.
		marks := pts
		if len(pts) > 30 {
			step := (len(pts) + 11) / 12
			marks = nil
			for i := s.style % step; i < len(pts); i += step {
				marks = append(marks, pts[i])
			}
		}
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = line.Color
		sc.GlyphStyle.Radius = vg.Points(2.6)
		sc.GlyphStyle.Shape = glyphs[s.style%len(glyphs)]
		if s.yaoki {
			top = append(top, line, sc)
		} else {
			p.Add(line, sc)
		}
		legend.Add(s.name, line, sc)
	}
	p.Add(top...)
	if len(f.refs) > 0 {
		for _, r := range f.refs {
			sc, err := plotter.NewScatter(plotter.XYs{{X: r.x, Y: r.y}})
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color = palette[r.style%len(palette)]
			sc.GlyphStyle.Radius = vg.Points(6)
			sc.GlyphStyle.Shape = draw.RingGlyph{}
			p.Add(sc)
		}
		key, _ := plotter.NewScatter(plotter.XYs{{}})
		key.GlyphStyle.Color = color.Gray{0x40}
		key.GlyphStyle.Radius = vg.Points(5)
		key.GlyphStyle.Shape = draw.RingGlyph{}
		legend.Add(f.refName, key)
	}
	if !math.IsNaN(f.xMin) {
		p.X.Min = f.xMin
	}
	if !math.IsNaN(f.xMax) {
		p.X.Max = f.xMax
	}
	if !math.IsNaN(f.yMin) {
		p.Y.Min = f.yMin
	}
	if !math.IsNaN(f.yMax) {
		p.Y.Max = f.yMax
	} else if !f.logY {
		p.Y.Max += 0.04 * (p.Y.Max - p.Y.Min) // room above the highest line
	} else {
		p.Y.Max *= 1.3
	}
	// The legend goes in a column right of the plot, where it hides no
	// line.
	w, h := 20*vg.Centimeter, 11*vg.Centimeter
	lw := legend.Rectangle(draw.Canvas{}).Size().X + vg.Points(14)
	for _, ext := range []string{"svg", "png"} {
		var c vg.CanvasWriterTo
		if ext == "svg" {
			c = vgsvg.New(w, h)
		} else {
			c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
		}
		dc := draw.New(c)
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		legend.YOffs = -vg.Points(30) // below the title, level with the top of the plot
		legend.Draw(draw.Crop(dc, w-lw+vg.Points(6), 0, 0, 0))
		out, err := os.Create(filepath.Join(dir, f.file+"."+ext))
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(out); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	return nil
}

// yRange returns the smallest and largest y of the figure's lines, or its
// fixed bounds.
func (f *figure) yRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range f.lines {
		for _, y := range s.ys {
			if !math.IsNaN(y) && (!f.logY || y > 0) {
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
	}
	if !math.IsNaN(f.yMin) {
		lo = f.yMin
	}
	if !math.IsNaN(f.yMax) {
		hi = f.yMax
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	return lo, hi
}

// policyIndex returns the position of each policy name, for its colour.
func policyIndex(ps []policyInfo) map[string]int {
	m := map[string]int{}
	for i, p := range ps {
		m[p.Name] = i
	}
	return m
}

func (r *simReport) figures() []*figure {
	var out []*figure
	if h := r.Herd; h != nil {
		idx := policyIndex(h.Policies)
		calls := newFigure("herd-calls", "Herd: calls until every client has written", "clients", "write calls (mean per run)")
		calls.caption = fmt.Sprintf("Writes that reached the server until every client's write was in, mean of %d runs.", h.Runs)
		calls.yMin = 0
		secs := newFigure("herd-time", "Herd: time until the last client has written", "clients", "completion time (s, log scale)")
		secs.caption = fmt.Sprintf("Time until the last client got its successful write, mean of %d runs.", h.Runs)
		secs.logY = true
		calls.params = fmt.Sprintf("all clients start at t = 0, hops |N(%v, %v)|; the post's base %v, cap %v, %d runs per point", h.Hop.HopMean, h.Hop.HopStdDev, h.PostBase, h.PostCap, h.Runs)
		secs.params = calls.params
		if h.PostBase == 5*time.Millisecond && h.PostCap == 2*time.Second && h.Hop.HopMean == 10*time.Millisecond && h.Hop.HopStdDev == 2*time.Millisecond &&
			slices.ContainsFunc(h.Points, func(p sim.HerdPoint) bool { return p.Clients == 100 }) {
			// The 2015 post's figures at 100 clients, in the post's order
			// (a slice, not a map, so that the plots are drawn alike every
			// time).
			for _, v := range []struct {
				name        string
				calls, secs float64
			}{{"none", 2420, 2.0}, {"exponential", 1850, 63}, {"full", 795, 4.9}, {"equal", 810, 6.6}, {"decorrelated", 1000, 4.5}} {
				if i, ok := idx[v.name]; ok {
					calls.refs = append(calls.refs, refPoint{100, v.calls, i})
					secs.refs = append(secs.refs, refPoint{100, v.secs, i})
				}
			}
			calls.refName, secs.refName = "published (2015 post)", "published (2015 post)"
		}
		for _, pi := range h.Policies {
			var xs, cs, ts []float64
			for _, p := range h.Points {
				if p.Policy == pi.Name {
					xs, cs, ts = append(xs, float64(p.Clients)), append(cs, p.Calls.Mean), append(ts, p.Time.Mean)
				}
			}
			yk := pi.Name == "yaoki"
			calls.lines = append(calls.lines, series{name: pi.Name, xs: xs, ys: cs, style: idx[pi.Name], yaoki: yk})
			secs.lines = append(secs.lines, series{name: pi.Name, xs: xs, ys: ts, style: idx[pi.Name], yaoki: yk})
		}
		out = append(out, calls, secs)
	}
	if o := r.Outage; o != nil {
		idx := policyIndex(o.Policies)
		split := len(o.Clients) > 1
		succ := newFigure("outage-success", "Outage: calls that succeeded", "server failure rate p", "calls that succeeded (%)")
		succ.caption = "Share of calls that eventually succeeded, against the share of attempts the server fails."
		succ.xMin, succ.xMax, succ.yMin, succ.yMax = 0, 1, 0, 100
		zoom := newFigure("outage-success-low", "Outage: calls that succeeded, low failure rates", "server failure rate p", "calls that succeeded (%)")
		zoom.caption = "The same, for p up to 0.1, where retries are meant to hide failures."
		zoom.xMin, zoom.xMax, zoom.yMax = 0, 0.1, 100.2
		zoom.hline, zoom.hlineName = 99.9, "99.9 % (the goal)"
		amp := newFigure("outage-amplification", "Outage: load on the server", "server failure rate p", "attempts sent per call")
		amp.caption = "Attempts the server receives per call the clients meant to make; a call refused locally (outage-refused) sends none, so a line below 1 is calls refused, not load saved."
		amp.xMin, amp.xMax, amp.yMin = 0, 1, 0 // from 0, so that a policy that refuses calls locally stays on the plot
		refused := newFigure("outage-refused", "Outage: calls refused locally", "server failure rate p", "calls refused before any attempt (%)")
		refused.caption = "Calls that a guard (a breaker, a throttle) refused before any attempt: they neither load the server nor succeed."
		refused.xMin, refused.xMax, refused.yMin = 0, 1, 0
		anyRefused := false
		var shapes []string
		for i, n := range o.Clients {
			shapes = append(shapes, fmt.Sprintf("%d × %g calls/s", n, o.Rates[i]))
		}
		kind := "server errors"
		if o.Overload {
			kind = "overload answers"
		}
		params := fmt.Sprintf("clients %s for %v; hops Exp(%v), failures are %s, %d runs per point", strings.Join(shapes, ", "), o.Duration, o.HopMean, kind, o.Runs)
		succ.params, zoom.params, amp.params, refused.params = params, params, params, params
		post := o.Duration == 10*time.Second && o.HopMean == 10*time.Millisecond && !o.Overload
		for i, n := range o.Clients {
			post = post && (n != 100 || o.Rates[i] == 10)
		}
		if post && slices.Contains(o.Clients, 100) {
			// The 2022 post's figures (100 clients × 10 calls/s).
			if i, ok := idx["3 retries"]; ok {
				succ.refs = append(succ.refs, refPoint{0.5, 93.6, i})
				amp.refs = append(amp.refs, refPoint{0.5, 1.88, i}, refPoint{1, 4.00, i})
			}
			if i, ok := idx["token bucket"]; ok {
				amp.refs = append(amp.refs, refPoint{1, 1.10, i})
			}
			if i, ok := idx["breaker"]; ok {
				amp.refs = append(amp.refs, refPoint{1, 1.00, i})
			}
			succ.refName, amp.refName = "published (2022 post, 100 clients)", "published (2022 post, 100 clients)"
		}
		for ci, n := range o.Clients {
			for _, pi := range o.Policies {
				var xs, ss, as, rs, zx, zs []float64
				for _, p := range o.Points {
					if p.Policy != pi.Name || p.Clients != n {
						continue
					}
					xs, ss, as = append(xs, p.FailureRate), append(ss, 100*p.Success.Mean), append(as, p.Amplification.Mean)
					rs = append(rs, 100*p.Refused.Mean)
					anyRefused = anyRefused || p.Refused.Mean > 0
					if p.FailureRate <= 0.1 {
						zx, zs = append(zx, p.FailureRate), append(zs, 100*p.Success.Mean)
					}
				}
				name := pi.Name
				if split {
					name = fmt.Sprintf("%s, %d clients", pi.Name, n)
				}
				s := series{name: name, style: idx[pi.Name], dash: ci, yaoki: pi.Name == "yaoki"}
				s1, s2, s3, s4 := s, s, s, s
				s1.xs, s1.ys = xs, ss
				s2.xs, s2.ys = zx, zs
				s3.xs, s3.ys = xs, as
				s4.xs, s4.ys = xs, rs
				succ.lines, zoom.lines, amp.lines = append(succ.lines, s1), append(zoom.lines, s2), append(amp.lines, s3)
				refused.lines = append(refused.lines, s4)
			}
		}
		zoom.yMin = math.Floor(zoom.lowest()) - 0.5
		out = append(out, succ, zoom, amp)
		if anyRefused {
			out = append(out, refused)
		}
	}
	if c := r.Collapse; c != nil {
		out = append(out, r.collapseFigures()...)
	}
	if t := r.Tail; t != nil {
		out = append(out, t.figures()...)
	}
	if l := r.RateLimit; l != nil {
		out = append(out, l.figures()...)
	}
	return out
}

// lowest returns the smallest y over the figure's lines (100 if none).
func (f *figure) lowest() float64 {
	lo := 100.0
	for _, s := range f.lines {
		for _, y := range s.ys {
			lo = math.Min(lo, y)
		}
	}
	return lo
}

func (r *simReport) collapseFigures() []*figure {
	c := r.Collapse
	idx := policyIndex(c.Policies)
	// The time series are drawn for one trigger: the spike to
	// 80/s for 5 s if it was run, else the last one (the sweeps run their
	// strongest trigger last).
	show := c.Points[len(c.Points)-1].Trigger
	for _, p := range c.Points {
		if t := p.Trigger; t.Kind == sim.Spike && t.Peak == 80 && t.Width == 5*time.Second {
			show = t
			break
		}
	}
	label := triggerLabel(show)
	b := c.Base
	procs := "1 client process"
	if b.Clients > 1 {
		procs = fmt.Sprintf("%d client processes", b.Clients)
	}
	params := fmt.Sprintf("%g requests/s, timeout %v, service %v + %v·C; hops Exp(%v), %s, %d runs", b.Rate, b.Timeout, b.ServiceBase, b.ServicePerRequest, b.HopMean, procs, c.Runs)
	good := newFigure("collapse-goodput", "Collapse: goodput, "+label, "time (s)", "answers in time per second")
	good.caption = fmt.Sprintf("Answers that reached their client before its timeout, per second, mean of %d runs; base load %g requests/s.", c.Runs, c.Base.Rate)
	good.yMin = 0
	busy := newFigure("collapse-inflight", "Collapse: work in the server, "+label, "time (s)", "attempts in service (log scale)")
	busy.caption = fmt.Sprintf("Attempts in service at the end of each second, mean of %d runs; above %d the run counts as collapsed.", c.Runs, c.Base.Threshold)
	busy.logY = true
	busy.hline, busy.hlineName = float64(c.Base.Threshold), "collapse threshold"
	good.params, busy.params = params, params
	if show.Kind != sim.NoTrigger {
		good.band = [2]float64{show.At.Seconds(), show.End().Seconds()}
		busy.band = good.band
	}
	for _, p := range c.Points {
		if p.Trigger != show {
			continue
		}
		xs := make([]float64, len(p.Goodput))
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		s := series{name: p.Policy, xs: xs, style: idx[p.Policy], yaoki: p.Policy == "yaoki"}
		g, b := s, s
		g.ys, b.ys = p.Goodput, p.InFlight
		good.lines, busy.lines = append(good.lines, g), append(busy.lines, b)
	}
	out := []*figure{good, busy}

	// Runs collapsed against the strength of the trigger, one line per
	// policy and width.
	var widths []float64
	for _, p := range c.Points {
		if w := p.Trigger.Width.Seconds(); p.Trigger.Kind != sim.NoTrigger && !slices.Contains(widths, w) {
			widths = append(widths, w)
		}
	}
	kind := c.Points[0].Trigger.Kind
	if kind == sim.NoTrigger {
		return out
	}
	xl := "spike peak (requests/s)"
	if kind == sim.Slowdown {
		xl = "slowdown factor (× service time)"
	}
	share := newFigure("collapse-share", "Collapse: runs still down at the end", xl, "runs collapsed at the end (%)")
	share.caption = fmt.Sprintf("Share of %d runs with more than %d attempts in service at t = %v.", c.Runs, c.Base.Threshold, c.Base.Duration)
	share.yMin, share.yMax = -2, 102
	share.params = params
	if i, ok := idx["backoff + jitter"]; ok && b.Rate == 40 && b.Timeout == 3*time.Second && b.Clients == 1 && kind == sim.Spike &&
		slices.ContainsFunc(c.Points, func(p sim.CollapsePoint) bool { return p.Trigger.Peak == 70 && p.Trigger.Width == 10*time.Second }) {
		// The reference simulation: no run of 10 collapsed at 70/s × 10 s.
		share.refs = []refPoint{{70, 0, i}}
		share.refName = "reference (backoff + jitter, 70/s × 10s)"
	}
	for wi, w := range widths {
		for _, pi := range c.Policies {
			var xs, ys []float64
			for _, p := range c.Points {
				if p.Policy != pi.Name || p.Trigger.Width.Seconds() != w {
					continue
				}
				x := p.Trigger.Peak
				if kind == sim.Slowdown {
					x = p.Trigger.Factor
				}
				xs, ys = append(xs, x), append(ys, 100*p.Collapsed)
			}
			name := pi.Name
			if len(widths) > 1 {
				name = fmt.Sprintf("%s, %gs", pi.Name, w)
			}
			share.lines = append(share.lines, series{name: name, xs: xs, ys: ys, style: idx[pi.Name], dash: wi, yaoki: pi.Name == "yaoki"})
		}
	}
	return append(out, share)
}

// writeFolder writes the plots, the numbers and index.html into dir and
// returns the path of index.html.
func (r *simReport) writeFolder(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	figs := r.figures()
	for _, f := range figs {
		if err := f.render(dir); err != nil {
			return "", fmt.Errorf("%s: %w", f.file, err)
		}
	}
	var csvBuf, jsonBuf, htmlBuf bytes.Buffer
	if err := r.writeCSV(&csvBuf); err != nil {
		return "", err
	}
	if err := r.writeJSON(&jsonBuf); err != nil {
		return "", err
	}
	if err := r.writeHTML(&htmlBuf, figs); err != nil {
		return "", err
	}
	for name, b := range map[string][]byte{"results.csv": csvBuf.Bytes(), "results.json": jsonBuf.Bytes(), "index.html": htmlBuf.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "index.html"), nil
}
