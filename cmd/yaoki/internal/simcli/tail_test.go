package simcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// yaoki sim tail runs the scenario and writes its tables, its JSON and its
// plots; a retry policy flag is refused, since the scenario compares
// hedging policies.
func TestSimTail(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	r := NewCommand()
	r.SetOut(&out)
	r.SetErr(&out)
	r.SetArgs([]string{"tail", "--format", "json", "--runs", "1", "--fanout", "10", "--duration", "4s",
		"--brownout", "2s", "--recovery", "2s", "--policies", "none,yaoki", "--out", dir})
	if err := r.Execute(); err != nil {
		t.Fatalf("yaoki sim tail: %v\n%s", err, out.String())
	}
	var doc struct {
		Tail struct {
			Points []struct {
				Policy string `json:"policy"`
				Phases map[string]struct {
					P999 struct{ Mean float64 } `json:"p999_s"`
				} `json:"phases"`
				Extra []float64 `json:"extra_requests_per_s"`
			} `json:"points"`
		} `json:"tail"`
	}
	if err := json.NewDecoder(&out).Decode(&doc); err != nil {
		t.Fatalf("decoding the JSON: %v", err)
	}
	pts := doc.Tail.Points
	if len(pts) != 2 || pts[0].Policy != "none" || pts[1].Policy != "yaoki" {
		t.Fatalf("got %+v, want the points of none and yaoki", pts)
	}
	for _, p := range pts {
		if len(p.Extra) != 8 || len(p.Phases) != 3 || p.Phases["healthy"].P999.Mean <= 0 {
			t.Errorf("%s: %d seconds, phases %+v; want 8 seconds and 3 phases with latencies", p.Policy, len(p.Extra), p.Phases)
		}
	}
	for _, f := range []string{"tail-p99.svg", "tail-load.png", "index.html", "results.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
	bad := NewCommand()
	bad.SetOut(io.Discard)
	bad.SetErr(io.Discard)
	bad.SetArgs([]string{"tail", "--base", "1s", "--out", ""})
	var ee *cli.ExitError
	if err := bad.Execute(); !errors.As(err, &ee) || ee.Code != cli.ExitUsage {
		t.Errorf("yaoki sim tail --base 1s: %v, want exit %d (bad usage)", err, cli.ExitUsage)
	}
}
