package breaker

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPermitDoneTwice: a caller that calls Done twice on one closed-state
// Permit (an explicit Done and a deferred one, say) reports one call: its
// failure counts once, and a breaker that trips on two consecutive
// failures stays closed until a second call fails.
func TestPermitDoneTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // Allow reads the clock: a virtual one
		for _, c := range []Config{
			{ConsecutiveFailures: 2, FailureRatio: Disabled},
			{WindowCalls: 10, MinCalls: 2, FailureRatio: 0.6}, // 1 failure of 2: 50 %; of 3 (twice counted): 67 %
			{SlowCall: time.Second, ConsecutiveFailures: 2, FailureRatio: Disabled},
		} {
			b := newB(t, c)
			ok, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			ok.Done(nil)
			p, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			p.Done(boom)
			p.Done(boom) // again
			if s := b.State(); s != Closed {
				t.Fatalf("%+v: one failure reported twice through its Permit: state %v, want closed", c, s)
			}
			p, err = b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			p.Done(boom)
			if s := b.State(); s != Open {
				t.Errorf("%+v: a second call failed: state %v, want open", c, s)
			}
		}
	})
}

// TestClosedTicketReportedTwice: with CheckTickets, a closed-state ticket
// reported twice through DoneAt counts once, and DoubleReports says so;
// without it, a closed ticket carries no identity (AllowAt stays one
// atomic load) and the second report counts as another call, as DoneAt's
// contract says.
func TestClosedTicketReportedTwice(t *testing.T) {
	for _, c := range []struct {
		name   string
		c      Config
		onFail State // the state once one failure was reported twice
	}{
		{"consecutive", Config{ConsecutiveFailures: 2, FailureRatio: Disabled}, Open},
		{"count window", Config{WindowCalls: 10, MinCalls: 2, FailureRatio: 0.6}, Open},
		{"time window", Config{MinCalls: 2, FailureRatio: 0.6}, Open},
		{"slow", Config{SlowCall: time.Second, SlowRatio: 0.6, MinCalls: 2, FailureRatio: Disabled}, Open},
	} {
		for _, checked := range []bool{true, false} {
			cfg := c.c
			cfg.CheckTickets = checked
			b := newB(t, cfg)
			call(t, b, at(0), nil)
			tk, err := b.AllowAt(at(time.Second), false)
			if err != nil {
				t.Fatal(err)
			}
			b.DoneAt(at(2*time.Second), tk, 2*time.Second, boom)
			b.DoneAt(at(2*time.Second), tk, 2*time.Second, boom) // again
			want, wantTwice := Closed, 1
			if !checked {
				want, wantTwice = c.onFail, 0
			}
			if s := b.StateAt(at(2 * time.Second)); s != want {
				t.Errorf("%s, CheckTickets %v: one failure reported twice: state %v, want %v", c.name, checked, s, want)
			}
			if n := b.DoubleReports(); n != wantTwice {
				t.Errorf("%s, CheckTickets %v: DoubleReports %d, want %d", c.name, checked, n, wantTwice)
			}
			if checked { // a second slow failure, from another call
				tk, err := b.AllowAt(at(3*time.Second), false)
				if err != nil {
					t.Fatal(err)
				}
				b.DoneAt(at(4*time.Second), tk, 2*time.Second, boom)
				if s := b.StateAt(at(4 * time.Second)); s != Open {
					t.Errorf("%s: a second call failed: state %v, want open", c.name, s)
				}
			}
		}
	}
}

// TestClosedTicketsCheckedConcurrently: with CheckTickets, 64 calls each
// report their failure twice at once (two layers reporting one ticket);
// the count window holds 64 failures, not 128, and 64 double reports are
// counted. Run with -race: the check itself takes the breaker's lock.
func TestClosedTicketsCheckedConcurrently(t *testing.T) {
	b := newB(t, Config{WindowCalls: 200, MinCalls: 200, FailureRatio: 1, ConsecutiveFailures: 100, CheckTickets: true})
	tks := make([]uint64, 64)
	for i := range tks {
		var err error
		if tks[i], err = b.AllowAt(at(0), false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, tk := range tks {
		for range 2 {
			wg.Go(func() { b.DoneAt(at(0), tk, 0, boom) })
		}
	}
	wg.Wait()
	if n := b.DoubleReports(); n != 64 {
		t.Errorf("DoubleReports %d, want 64", n)
	}
	if n := b.consec.Load(); n != 64 {
		t.Errorf("%d consecutive failures counted, want 64", n)
	}
	// 36 more failures make 100 in a row: the breaker trips on the 100th.
	for i := range 36 {
		wantState(t, b, at(0), Closed)
		call(t, b, at(time.Duration(i)), boom)
	}
	wantState(t, b, at(0), Open)
}

// TestHookPanicFreesProbe: a hook that panics as AllowAt moves the breaker
// to half-open (its Observer or OnStateChange) makes AllowAt panic, so the
// caller never gets the probe's ticket: the probe's slot is freed, and the
// next call is the probe instead of being refused until OpenTimeout.
func TestHookPanicFreesProbe(t *testing.T) {
	b := newB(t, Config{ConsecutiveFailures: 1, OnStateChange: func(_ string, _, to State) {
		if to == HalfOpen {
			panic("hook")
		}
	}})
	call(t, b, at(0), boom) // open for 30 s
	func() {
		defer func() {
			if v := recover(); v != "hook" {
				t.Fatalf("AllowAt recovered %v, want the hook's panic", v)
			}
		}()
		_, _ = b.AllowAt(at(30*time.Second), false)
	}()
	tk, err := b.AllowAt(at(31*time.Second), false)
	if err != nil {
		t.Fatalf("the next call: %v, want it let through as the probe", err)
	}
	b.DoneAt(at(31*time.Second), tk, time.Millisecond, nil)
	wantState(t, b, at(31*time.Second), Closed)
}
