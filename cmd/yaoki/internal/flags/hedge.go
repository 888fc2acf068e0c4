package flags

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/hedge"
)

// Hedge are yaoki http's hedging flags: --hedge-after and
// --max-hedges.
type Hedge struct {
	after time.Duration
	max   int
}

// Register registers --hedge-after and --max-hedges on f.
func (h *Hedge) Register(f *pflag.FlagSet) {
	f.DurationVar(&h.after, "hedge-after", 0, "send the request again if no answer came after this long, and take the first answer (GET, HEAD, PUT, DELETE... or a request with an Idempotency-Key); default: no hedging")
	f.IntVar(&h.max, "max-hedges", 0, "with --hedge-after, most copies sent, each --hedge-after after the previous (1 to 10, default 2); they count towards --max-attempts")
}

// Config returns yaoki http's hedging configuration, nil for none. One
// request per process has no history to budget or to judge a brownout by:
// the hedges the flags ask for are sent (within --max-attempts and the
// policy's guards).
func (h *Hedge) Config(cmd *cobra.Command) (*hedge.Config, error) {
	c, err := h.Fixed(cmd)
	if c != nil {
		c.Budget, c.Brownout = hedge.Off, hedge.Off
	}
	return c, err
}

// Fixed returns the fixed-delay hedging the flags ask for, with the
// budget and brownout stop of package hedge's defaults; nil for none.
func (h *Hedge) Fixed(cmd *cobra.Command) (*hedge.Config, error) {
	changed := cmd.Flags().Changed
	if !changed("hedge-after") {
		if changed("max-hedges") {
			return nil, cli.Usagef("--max-hedges %d needs --hedge-after DURATION (when to send a copy)", h.max)
		}
		return nil, nil
	}
	if h.after <= 0 {
		return nil, cli.Usagef("--hedge-after %v: want a duration > 0, such as 50ms", h.after)
	}
	if changed("max-hedges") && (h.max < 1 || h.max > 10) {
		return nil, cli.Usagef("--max-hedges %d: want 1 to 10 copies", h.max)
	}
	return &hedge.Config{Delay: h.after, MaxHedges: h.max}, nil
}
