package httpretry

import (
	"context"
	"testing"

	"github.com/yaoki-go/yaoki/event"
)

// TestObserverCalledOutsideLock: the Transport's observer is a hook, called
// outside every lock of the call: for a hedged call's give-up on a final
// status too, whose reason (do_not_retry here) is read under the lock that
// the call's attempts share. An observer called under it would hold up
// the attempts still in flight (each takes the lock when its answer comes)
// for as long as it runs, and deadlock one that waits for them.
func TestObserverCalledOutsideLock(t *testing.T) {
	cl := &call{hs: &hedgeState{statuses: []int{503}}, final: "do_not_retry"}
	var reason string
	o := &observer{cl: cl, next: event.Func(func(_ context.Context, e event.Event) {
		if !cl.hs.mu.TryLock() {
			t.Errorf("%v reported under the hedged call's lock", e.Kind)
			return
		}
		cl.hs.mu.Unlock()
		reason = e.Reason
	})}
	for _, k := range []event.Kind{event.AttemptEnd, event.GaveUp} {
		o.Observe(context.Background(), event.Event{Kind: k, Attempt: 1, Reason: permanentKey})
	}
	if reason != "do_not_retry" {
		t.Errorf("give-up reason %q, want do_not_retry", reason)
	}
}
