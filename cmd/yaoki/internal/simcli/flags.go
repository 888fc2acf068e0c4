package simcli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

// simFlags names the yaoki sim flag behind each configuration field that
// package sim checks, so that an error says "--clients -5", the way the
// user wrote it, and not "Herd.Clients -5".
var simFlags = map[string]string{
	"Herd.Clients": "--clients", "Herd.HopMean": "--hop-mean", "Herd.HopStdDev": "--hop-sd",
	"Outage.Clients": "--clients", "Outage.Rate": "--rate (or --total-rate ÷ --clients)", "Outage.Duration": "--duration",
	"Outage.HopMean": "--hop-mean", "Outage.FailureRate": "--p",
	"Collapse.Rate": "--rate", "Collapse.Trigger.At": "--at", "Collapse.Trigger.Width": "--width",
	"Collapse.Trigger.Peak": "--peak", "Collapse.Trigger.Factor": "--factor", "Collapse.Timeout": "--timeout",
	"Collapse.HopMean": "--hop-mean", "Collapse.Duration": "--duration", "Collapse.Threshold": "--threshold",
	"Collapse.Clients": "--clients",
	"Tail.Fanout":      "--fanout", "Tail.Rate": "--rate", "Tail.Duration": "--duration", "Tail.Fast": "--fast",
	"Tail.Slow": "--slow", "Tail.SlowShare": "--slow-share",
	"RateLimit.Clients": "--clients", "RateLimit.Load": "--load", "RateLimit.PerWindow": "--per-window",
	"RateLimit.Window": "--window", "RateLimit.Duration": "--duration", "RateLimit.HopMean": "--hop-mean",
	// your policy (--base, --cap, --multiplier), as sim.Policy.Validate
	// names its fields
	"Backoff.Base": "--base", "Backoff.Cap": "--cap", "Backoff.Multiplier": "--multiplier",
}

// zeroMeans matches the "(0 means 100)" of a field's accepted range: a
// flag has its default written in its help, and 0 is not that default.
var zeroMeans = regexp.MustCompile(`\s*\(0 means [^)]*\)`)

// simUsage turns a sim configuration error into bad usage that names the
// flag: "--clients -5: out of range; want 1 to 1e6". Errors of fields no
// flag sets keep their own words.
func simUsage(err error) error {
	var ce *configerr.Error
	if errors.As(err, &ce) {
		if flag, ok := simFlags[ce.Field]; ok {
			problem := ce.Problem
			if problem == "" {
				problem = "out of range"
			}
			want := strings.TrimSpace(zeroMeans.ReplaceAllString(ce.Want, ""))
			if nz, ok := simNoZero[strings.TrimPrefix(flag, "--")]; ok && want == "≥ 0" {
				want = nz // the flag refuses 0 too (refuseZeros)
			}
			return cli.Usagef("%s %v: %s; want %s", flag, ce.Value, problem, want)
		}
	}
	return cli.Usagef("%s", strings.TrimPrefix(fmt.Sprint(err), "sim: "))
}

// checkOutFolder makes sure the report folder can be written before the
// simulations start, which may take minutes: it creates the folder and a
// file in it, and removes the file.
func checkOutFolder(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Usagef("--out %s: cannot make the report folder: %v", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".yaoki-check-*")
	if err != nil {
		return cli.Usagef("--out %s: cannot write in the report folder: %v", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the path that *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// simNoZero lists the sim flags for which 0 means nothing (no clients, no
// time, no traffic): a 0 given on the command line is refused rather than
// read as the scenario's default, which the flag's help already shows.
var simNoZero = map[string]string{
	"clients": "≥ 1 client", "rate": "> 0 per second", "total-rate": "> 0 per second", "duration": "> 0",
	"hop-mean": "> 0", "peak": "> 0 per second", "width": "> 0", "factor": "> 1", "timeout": "> 0",
	"service-base": "> 0", "threshold": "≥ 1", "fanout": "≥ 1", "fast": "> 0", "slow": "> 0",
	"base": "> 0", "cap": "> 0", "multiplier": "> 1", "load": "> 0", "per-window": "≥ 1", "window": "> 0",
	"brownout-latency": "> 0", "post-base": "> 0", "post-cap": "> 0",
}

// zeroAsNone returns what package sim is to take for the value d of a flag
// whose 0 means something (--hop-sd 0: no spread; --at 0s: at the start;
// --service-per-request 0: none), where sim reads 0 as its default: a
// negative duration, which sim reads as none. A negative d given on the
// command line is refused.
func zeroAsNone(flag string, d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, cli.Usagef("--%s %v: out of range; want ≥ 0", flag, d)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// refuseZeros returns bad usage for a flag of simNoZero that the command
// line set to 0 (or to a list holding 0): numbers, durations and lists of
// them all print as their values ("0", "0s", "[10,0]").
func refuseZeros(fs *pflag.FlagSet) error {
	var bad error
	fs.Visit(func(f *pflag.Flag) {
		want, ok := simNoZero[f.Name]
		if ok && bad == nil && slices.ContainsFunc(strings.Split(strings.Trim(f.Value.String(), "[]"), ","), isZero) {
			bad = cli.Usagef("--%s 0: want %s (leave the flag out for its default, %s)", f.Name, want, defaultOf(f))
		}
	})
	return bad
}

// usageDefault finds the "(default 50ms)" that a flag's usage writes when
// its value's zero stands for a default chosen later.
var usageDefault = regexp.MustCompile(`\(default ([^)]*)\)`)

// defaultOf is f's default as its help gives it: the one its usage names,
// or its value's default written as typed.
func defaultOf(f *pflag.Flag) string {
	if m := usageDefault.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	return tidyList(f.DefValue)
}

// tidyDefaults makes the help of cmd and of its subcommands write each
// list default as it is typed ("0,0.0001"), not as pflag prints it
// ("[0.000000,0.000100]").
func tidyDefaults(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) { f.DefValue = tidyList(f.DefValue) })
	for _, c := range cmd.Commands() {
		tidyDefaults(c)
	}
}

// tidyList writes a list default as pflag prints it, "[0.500000,1.000000]",
// as it is typed, "0.5,1"; other values are returned as they are.
func tidyList(v string) string {
	if !strings.HasPrefix(v, "[") {
		return v
	}
	items := strings.Split(strings.Trim(v, "[]"), ",")
	for i, it := range items {
		if f, err := strconv.ParseFloat(it, 64); err == nil {
			items[i] = strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return strings.Join(items, ",")
}

// isZero reports whether v, a number or a duration, is 0.
func isZero(v string) bool {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return n == 0
	}
	d, err := time.ParseDuration(v)
	return err == nil && d == 0
}
