package simcli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spf13/pflag"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// zeroScenarios are small runs of each scenario, flag by flag, that
// TestZeroIsRefusedOrTakenAsGiven varies.
var zeroScenarios = map[string]map[string]string{
	"herd":      {"clients": "5", "runs": "1"},
	"outage":    {"clients": "5", "p": "0.5", "duration": "2s", "runs": "1"},
	"collapse":  {"peak": "90", "width": "5s", "duration": "40s", "runs": "1"},
	"tail":      {"fanout": "5", "duration": "3s", "brownout": "1s", "recovery": "1s", "runs": "1"},
	"ratelimit": {"load": "1.2", "duration": "3s", "runs": "1"},
}

// A flag given 0 is either refused as bad usage or taken as given, never
// read as its default: for every number, duration or list flag of every
// scenario whose default is not 0, `--flag 0` must print something other
// than `--flag DEFAULT` (or be refused). The flags whose 0 means something
// (--hop-sd 0: hops without spread; --at 0s: a trigger at the start;
// --brownout 0: none) were read as their defaults, and the run said
// nothing of it.
func TestZeroIsRefusedOrTakenAsGiven(t *testing.T) {
	run := func(scenario string, set map[string]string) (string, error) {
		args := []string{scenario, "--out", "", "--format", "csv", "--workers", "1", "--policies", "yaoki"}
		if scenario == "herd" {
			args[len(args)-1] = "full"
		}
		if scenario == "tail" {
			args[len(args)-1] = "yaoki"
		}
		for k, v := range set {
			args = append(args, "--"+k, v)
		}
		var out bytes.Buffer
		cmd := NewCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	for scenario, base := range zeroScenarios {
		sub, _, err := NewCommand().Find([]string{scenario})
		if err != nil {
			t.Fatal(err)
		}
		sub.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "int", "float64", "duration", "intSlice", "float64Slice", "durationSlice":
			default:
				return
			}
			def := tidyList(f.DefValue)
			if isZero(def) {
				return // 0 is the default
			}
			with := func(v string) map[string]string {
				m := map[string]string{f.Name: v}
				for k, bv := range base {
					if k != f.Name {
						m[k] = bv
					}
				}
				return m
			}
			zero, err := run(scenario, with("0"))
			var ee *cli.ExitError
			if errors.As(err, &ee) && ee.Code == cli.ExitUsage {
				return // refused
			}
			if err != nil {
				t.Errorf("yaoki sim %s --%s 0: %v; want it refused as bad usage (exit %d) or run", scenario, f.Name, err, cli.ExitUsage)
				return
			}
			dflt, err := run(scenario, with(def))
			if err != nil {
				t.Errorf("yaoki sim %s --%s %s: %v", scenario, f.Name, def, err)
				return
			}
			if zero == dflt {
				t.Errorf("yaoki sim %s --%s 0 prints what --%s %s prints: 0 was read as the default; want it taken as given or refused",
					scenario, f.Name, f.Name, def)
			}
		})
	}
}
