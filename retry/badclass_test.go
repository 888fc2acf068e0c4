package retry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A Classify hook that returns a class that is none of the three (here 7)
// does not make the error pass, nor retry it blindly: the error is taken
// as permanent and returned after the one attempt (ReasonPermanent, the
// error itself as the last), the give-up names the class returned, and
// the attempt is reported rejected. The error was retried as transient.
func TestClassifyBadClassNotRetried(t *testing.T) {
	boom := errors.New("boom")
	bad := func(error) retry.Class { return retry.Class(7) }
	check := func(t *testing.T, err error, calls int) {
		t.Helper()
		var re *retry.Error
		if !errors.As(err, &re) || re.Reason != retry.ReasonPermanent || re.Attempts != 1 || calls != 1 {
			t.Fatalf("got %v after %d calls; want a permanent give-up after 1 attempt", err, calls)
		}
		if re.Last != boom || !errors.Is(err, boom) || !errors.Is(err, retry.ErrPermanent) {
			t.Errorf("Last %v; want the attempt's error, seen by errors.Is with ErrPermanent", re.Last)
		}
		if msg := err.Error(); !strings.Contains(msg, "Policy.Classify returned class 7") {
			t.Errorf("error %q does not name the class Classify returned", msg)
		}
	}
	t.Run("Do", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &retrytest.Recorder{}
			calls := 0
			p := retry.Policy{Classify: bad, Env: &retry.Env{Observer: rec}}
			err := retry.Do(context.Background(), p, func(context.Context) error { calls++; return boom })
			check(t, err, calls)
			if ends := rec.Events(event.AttemptEnd); len(ends) != 1 || ends[0].Outcome != event.Rejected {
				t.Errorf("attempt ends %+v, want one, rejected", ends)
			}
		})
	})
	t.Run("plain Do", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			err := retry.Do(context.Background(), retry.Policy{Classify: bad}, func(context.Context) error { calls++; return boom })
			check(t, err, calls)
		})
	})
	t.Run("HedgeValue", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			p := retry.Policy{Classify: bad, Env: &retry.Env{Hedger: fixedHedger(t, time.Second, 1)}}
			_, err := retry.HedgeValue(context.Background(), p, func(context.Context) (int, error) { calls++; return 0, boom }, nil)
			check(t, err, calls)
		})
	})
}
