package simcli

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// linearTicks labels 4 to 8 round values of [min, max] without trailing
// zeros, with unlabelled minor ticks between them.
func linearTicks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: fmtTick(min, 0)}}
	}
	raw := (max - min) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	dec := max0(int(-math.Floor(math.Log10(step) + 1e-9)))
	if math.Abs(step/math.Pow(10, math.Floor(math.Log10(step)+1e-9))-2.5) < 1e-9 {
		dec++
	}
	var out []plot.Tick
	first := math.Ceil(min/step - 1e-9)
	for i := first; i*step <= max+step*1e-9; i++ {
		out = append(out, plot.Tick{Value: i * step, Label: fmtTick(i*step, dec)})
		if m := (i + 0.5) * step; m < max {
			out = append(out, plot.Tick{Value: m})
		}
	}
	if m := (first - 0.5) * step; m > min {
		out = append(out, plot.Tick{Value: m})
	}
	return out
}

// logTicks labels 1, 2 and 5 of each decade in [min, max] and marks the
// other integers of the decade.
func logTicks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		d := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * d
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = fmtTick(v, max0(int(-e)))
			}
			out = append(out, t)
		}
	}
	return out
}

func max0(n int) int { return max(n, 0) }

// fmtTick formats v with dec decimals and no trailing zeros.
func fmtTick(v float64, dec int) string {
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
