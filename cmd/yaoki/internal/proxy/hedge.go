package proxy

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/yaoki-go/yaoki/hedge"
)

// hedgeFields are the keys of a route's hedge mapping, one for each field
// of hedge.Config.
var hedgeFields = []string{"delay", "quantile", "max_hedges", "budget", "min_per_second", "brownout", "window"}

// hedge reads a route's hedge key: adaptive (or an empty mapping) for the
// defaults of package hedge, or a mapping of hedgeFields; nil when it has
// errors (recorded in c).
func (c *configReader) hedge(n *yaml.Node, path string) *hedge.Config {
	const want = "adaptive, or a mapping such as {delay: 50ms, max_hedges: 2} (keys: delay, quantile, max_hedges, budget, min_per_second, brownout, window)"
	before := len(c.errs)
	var cfg hedge.Config
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "adaptive" {
			c.fail(n, path, "%q: want %s", n.Value, want)
			return nil
		}
		return &cfg
	case yaml.MappingNode:
	default:
		c.fail(n, path, "%s: want %s", yamlKindName(n), want)
		return nil
	}
	c.fields(n, path, func(k, v *yaml.Node, p string) {
		if !slices.Contains(hedgeFields, k.Value) {
			c.fail(k, p, "unknown key: want one of %s", strings.Join(hedgeFields, ", "))
			return
		}
		s, ok := c.scalar(v, p, "a value")
		if !ok {
			return
		}
		switch k.Value {
		case "delay":
			if d, err := time.ParseDuration(s); err != nil || d <= 0 {
				c.fail(v, p, "%q: want a duration > 0 such as 50ms (a fixed delay before each hedge); leave the key out for an adaptive delay", s)
			} else {
				cfg.Delay = d
			}
		case "window":
			if d, err := time.ParseDuration(s); err != nil || d < 10*time.Millisecond || d > time.Hour {
				c.fail(v, p, "%q: want a duration from 10ms to 1h (default 10s)", s)
			} else {
				cfg.Window = d
			}
		case "quantile":
			if f, err := strconv.ParseFloat(s, 64); err != nil || !(f >= 0.5 && f < 1) {
				c.fail(v, p, "%q: want a number from 0.5 to below 1, such as 0.95 (default 0.97)", s)
			} else {
				cfg.Quantile = f
			}
		case "max_hedges":
			if m, err := strconv.Atoi(s); err != nil || m < 1 || m > 10 {
				c.fail(v, p, "%q: want 1 to 10 copies (default 2)", s)
			} else {
				cfg.MaxHedges = m
			}
		case "budget":
			cfg.Budget = c.shareOrOff(v, p, s, 10, "a share of the calls above 0 and up to 10, such as 0.1 (default 0.05), or off for no budget")
		case "min_per_second":
			cfg.MinPerSecond = c.shareOrOff(v, p, s, 1e6, "hedges per second above 0 and up to 1e6 (default 1), or off for no floor")
		case "brownout":
			cfg.Brownout = c.shareOrOff(v, p, s, 1, "a share of slow first attempts above 0 and up to 1 (default 0.5), or off to hedge however many are slow")
		}
	})
	if len(c.errs) > before {
		return nil
	}
	if err := cfg.Validate(); err != nil { // the checks above are hedge's; this catches what they miss
		c.fail(n, path, "%v", err)
		return nil
	}
	return &cfg
}

// shareOrOff reads a number in (0, max], or off (hedge.Off).
func (c *configReader) shareOrOff(v *yaml.Node, path, s string, max float64, want string) float64 {
	if s == "off" {
		return hedge.Off
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0 && f <= max) {
		c.fail(v, path, "%q: want %s", s, want)
		return 0
	}
	return f
}
