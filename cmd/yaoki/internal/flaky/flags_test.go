package flaky

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// A flag that qualifies a rate (--retry-after, --slow, --status-5xx,
// --seed) given without that rate would do nothing: it is refused as bad
// usage that says which rate it needs, instead of serving 200s as if it
// had not been written. --addr with a port past 65535 says so, not "is the
// port taken?". An --attempt-header that no request can carry (empty, with
// a colon, not ASCII) is refused, naming what a header name is made of.
func TestFlagsThatWouldDoNothing(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string
	}{
		{"--retry-after 2", "--retry-after 2 sets the Retry-After of --rate-429's answers, but --rate-429 is not set"},
		{"--rate-5xx 0.3 --retry-after date+2", "--retry-after date+2 sets the Retry-After of --rate-429's answers, but --rate-429 is not set"},
		{"--script 429,200 --retry-after 2", "write it in a --script step (429:retry-after=2)"},
		{"--rate-429 0.5 --slow 1s", "--slow 1s delays --rate-slow's answers, but --rate-slow is not set"},
		{"--status-5xx 200", "--status-5xx 200 is the status of --rate-5xx's answers, but --rate-5xx is not set"},
		{"--rate-5xx 0.5 --status-5xx 200", "--status-5xx 200: want a status from 500 to 599"},
		{"--script 503,200 --seed 7", "--seed 7 seeds the draws of the --rate-* flags, but none is set"},
		{"--addr 127.0.0.1:99999", `--addr "127.0.0.1:99999": port "99999": want a port from 0 to 65535`},
		{"--addr localhost:65536", `port "65536": want a port from 0 to 65535`},
		// A header name that no request can carry would log "-" for ever.
		{"--attempt-header=", `--attempt-header "": want a header name`},
		{"--attempt-header=Attempt:Count", `--attempt-header "Attempt:Count": want a header name`},
		{"--attempt-header=X-Retry\u00e9", `want a header name`},
	} {
		cmd := NewCommand()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(strings.Fields(tc.args))
		// Cancelled: a server started for a flag let through stops at once.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var ee *cli.ExitError
		if err := cmd.ExecuteContext(ctx); !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.Contains(ee.Msg, tc.want) {
			t.Errorf("yaoki flaky %s: %v; want exit %d and %q", tc.args, err, cli.ExitUsage, tc.want)
		}
	}
}

// A flaky stopped before any request says so without a dangling colon:
// "flaky: 0 requests, 0 keyed operations", not "...operations: ".
func TestSummaryWithoutRequests(t *testing.T) {
	var errOut strings.Builder
	cmd := NewCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(&errOut)
	cmd.SetArgs(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stops it as soon as it listens
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(errOut.String(), "flaky: 0 requests, 0 keyed operations\n") {
		t.Errorf("stderr %q; want it to end with the summary of no request, without a colon", errOut.String())
	}
}
