package plan

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestPlanFlagsTableIsTheLoops: for policies given by flags, with each
// jitter, the table `yaoki plan` prints is what the retry loop does with the
// policy the same flags build: as many retries as rows, each retry's wait,
// over 4000 seeded runs of a call that keeps failing, within the row's
// least and greatest wait and reaching close to both (decorrelated jitter:
// within them), and the mean of the
// draws within 3 % of the row's mean.
func TestPlanFlagsTableIsTheLoops(t *testing.T) {
	t.Setenv(policy.EnvMaxAttempts, "")
	t.Setenv(policy.EnvRetryMode, "")
	for _, args := range []string{
		"",
		"--jitter none --max-attempts 6 --base 100ms --cap 1s --multiplier 3",
		"--jitter equal --max-attempts 6 --base 100ms --cap 1s",
		"--jitter full --max-attempts 8 --base 10ms --cap 300ms --multiplier 1.5",
		"--jitter decorrelated --max-attempts 6 --base 50ms --cap 2s",
		"--jitter decorrelated --max-attempts 5 --base 1s --cap 1s",
		"--max-attempts 4 --cap 0",
		"--max-attempts 4 --base 0",
		"--retry-mode standard",
		"--retry-mode off",
	} {
		o := &planOptions{layers: 1, rows: 20}
		cmd := &cobra.Command{Use: "plan"}
		o.pf.Register(cmd.Flags())
		if err := cmd.Flags().Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		cp, err := o.pf.Build(cmd)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		tr := makePlan(cp, o).Tracks[0]
		rows := tr.Rows[1:] // the retries: row 1 is the first attempt
		const runs = 4000
		rng := rand.New(rand.NewPCG(1, 2))
		var (
			lo, hi = make([]float64, len(rows)), make([]float64, len(rows))
			sum    = make([]float64, len(rows))
		)
		for i := range lo {
			lo[i] = math.Inf(1)
		}
		for range runs {
			// A policy per run, as each yaoki exec or http process builds
			// one: the standard mode's quota is the call's own.
			cp, err := o.pf.Build(cmd)
			if err != nil {
				t.Fatal(err)
			}
			p, waits := retrytest.NoWait(cp.Retry)
			p.Env.Rand = rng.Float64
			_ = retry.Do(context.Background(), p, func(context.Context) error { return errors.New("refused") })
			all := waits.All()
			if len(all) != len(rows) {
				t.Fatalf("%q: the loop retried %d times, the plan shows %d retries", args, len(all), len(rows))
			}
			for k, w := range all {
				s := w.Seconds()
				if tr.AtOnce && w == time.Nanosecond {
					s = 0 // the loop's "at once", shown as 0
				}
				lo[k], hi[k] = min(lo[k], s), max(hi[k], s)
				sum[k] += s
			}
		}
		for k, r := range rows {
			const tiny = 1e-9
			if lo[k] < r.WaitMin-tiny || hi[k] > r.WaitMax+tiny {
				t.Errorf("%q: attempt %d: the loop waited %.6f to %.6f s, outside the plan's %.6f to %.6f", args, r.Attempt, lo[k], hi[k], r.WaitMin, r.WaitMax)
			}
			// Decorrelated jitter reaches its greatest wait only when every
			// earlier draw was its greatest: none of the runs does.
			span := r.WaitMax - r.WaitMin
			if tr.Jitter != "decorrelated" && (lo[k] > r.WaitMin+0.02*span+tiny || hi[k] < r.WaitMax-0.02*span-tiny) {
				t.Errorf("%q: attempt %d: the loop's waits (%.6f to %.6f s) stay away from the plan's bounds %.6f to %.6f", args, r.Attempt, lo[k], hi[k], r.WaitMin, r.WaitMax)
			}
			if mean := sum[k] / runs; math.Abs(mean-r.WaitMean) > 0.03*r.WaitMean+tiny {
				t.Errorf("%q: attempt %d: the loop waits %.6f s on average, the plan says %.6f", args, r.Attempt, mean, r.WaitMean)
			}
		}
	}
}

// TestPlanDeadlineRowsAreTheLoops: without jitter, and with every attempt
// running to --attempt-timeout, the attempts the retry loop makes on
// virtual time (testing/synctest) before --max-time ends the call are the
// rows the plan does not mark as after the deadline, each started at the
// row's worst start.
func TestPlanDeadlineRowsAreTheLoops(t *testing.T) {
	t.Setenv(policy.EnvMaxAttempts, "")
	t.Setenv(policy.EnvRetryMode, "")
	for _, args := range []string{
		"--jitter none --max-attempts 6 --base 100ms --cap 1s --attempt-timeout 2s --max-time 10s",
		"--jitter none --max-attempts 10 --base 1s --attempt-timeout 500ms --max-time 12s",
		"--jitter none --max-attempts 4 --base 3s --max-time 6s --attempt-timeout 1ms",
	} {
		o := &planOptions{layers: 1, rows: 20}
		cmd := &cobra.Command{Use: "plan"}
		o.pf.Register(cmd.Flags())
		if err := cmd.Flags().Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		cp, err := o.pf.Build(cmd)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var want []float64 // the starts of the rows before the deadline
		for _, r := range makePlan(cp, o).Tracks[0].Rows {
			if !r.AfterDL {
				want = append(want, r.WorstStart)
			}
		}
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var got []float64
			_ = retry.Do(context.Background(), cp.Retry, func(ctx context.Context) error {
				got = append(got, time.Since(start).Seconds())
				<-ctx.Done() // the attempt runs until its timeout
				return ctx.Err()
			})
			if len(got) != len(want) {
				t.Fatalf("%q: the loop started attempts at %v s, the plan shows %v before the deadline", args, got, want)
			}
			for k := range got {
				if math.Abs(got[k]-want[k]) > 1e-9 {
					t.Errorf("%q: attempt %d started at %v s in the loop, at %v s in the plan", args, k+1, got[k], want[k])
				}
			}
		})
	}
}
