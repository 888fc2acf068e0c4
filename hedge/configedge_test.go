package hedge_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
)

// Hostile configuration values (NaN, infinities, the extremes of int and
// Duration, a MaxHedges of 0 meaning the default next to -1 and 11) are
// rejected by New with an error that matches ErrInvalidConfig, names the
// field and says what is accepted; none is taken as a default or clamped.
func TestConfigExtremesRejected(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		c     hedge.Config
		field string
	}{
		{hedge.Config{Delay: math.MinInt64}, "Delay"},
		{hedge.Config{Quantile: nan}, "Quantile"},
		{hedge.Config{Quantile: -inf}, "Quantile"},
		{hedge.Config{Quantile: inf}, "Quantile"},
		{hedge.Config{MaxHedges: math.MaxInt}, "MaxHedges"},
		{hedge.Config{MaxHedges: math.MinInt}, "MaxHedges"},
		{hedge.Config{MaxHedges: -1}, "MaxHedges"},
		{hedge.Config{MaxHedges: 11}, "MaxHedges"},
		{hedge.Config{Budget: nan}, "Budget"},
		{hedge.Config{Budget: inf}, "Budget"},
		{hedge.Config{Budget: -inf}, "Budget"},
		{hedge.Config{MinPerSecond: nan}, "MinPerSecond"},
		{hedge.Config{MinPerSecond: inf}, "MinPerSecond"},
		{hedge.Config{Brownout: nan}, "Brownout"},
		{hedge.Config{Brownout: -inf}, "Brownout"},
		{hedge.Config{Window: math.MaxInt64}, "Window"},
		{hedge.Config{Window: -time.Second}, "Window"},
	} {
		h, err := hedge.New(c.c)
		if h != nil || !errors.Is(err, hedge.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, %v; want an invalid configuration error", c.c, h, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.field+": ") || !strings.Contains(msg, "want ") {
			t.Errorf("New(%+v): %q; want the field %s named and what is accepted", c.c, msg, c.field)
		}
	}
	// 0 is the default, and the bounds are accepted.
	for n, want := range map[int]int{0: hedge.DefaultMaxHedges, 1: 1, 10: 10} {
		h, err := hedge.New(hedge.Config{MaxHedges: n})
		if err != nil {
			t.Fatalf("New(MaxHedges: %d): %v", n, err)
		}
		if h.MaxHedges() != want {
			t.Errorf("MaxHedges %d gives %d, want %d", n, h.MaxHedges(), want)
		}
	}
}
