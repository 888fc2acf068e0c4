package httpretry

import (
	"context"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// observer passes the retry loop's events of one request on to the
// Transport's observer, with what HTTP adds to them: the component, the
// method, the host and the status. It exists only for requests of a
// Transport that has an observer, so that the others pay nothing.
type observer struct {
	next   event.Observer
	cl     *call
	method string
	host   string
	// held is the start of an unhedged call's attempt, reported only once
	// its request leaves (see sent): an attempt whose request cannot be
	// built, or whose caller has gone, is not sent and not reported.
	held    event.Event
	holding bool
}

// observedCall is an observed call's state on the heap, in one
// allocation: the call (the observer keeps a pointer to it), the observer
// that completes the loop's events, and the copy of the retrier's Env that
// carries that observer.
type observedCall struct {
	call
	obs   observer
	envCp retry.Env
}

func newObservedCall(cl *call, o event.Observer) *observedCall {
	oc := new(observedCall)
	oc.init(cl, o)
	return oc
}

// pooledObservedCall is newObservedCall from the Transport's pool of
// observedCalls (config.observed): for an unhedged call only, whose
// attempts end before it returns; the caller calls release when the call
// has returned.
func pooledObservedCall(cl *call, o event.Observer) *observedCall {
	oc, _ := cl.c.observed.Get().(*observedCall)
	if oc == nil {
		oc = new(observedCall)
	}
	oc.init(cl, o)
	return oc
}

func (oc *observedCall) init(cl *call, o event.Observer) {
	oc.call = *cl
	oc.obs = observer{next: o, cl: &oc.call, method: methodOf(cl.req), host: hostKey(cl.req.URL.Host)}
	oc.call.obs = &oc.obs
}

// release puts oc back in its Transport's pool, emptied: it keeps no
// request, answer or guard of the call alive.
func (oc *observedCall) release() {
	pool := &oc.c.observed
	*oc = observedCall{}
	pool.Put(oc)
}

// env returns a copy of e (nil: the zero Env) whose Observer is oc's.
func (oc *observedCall) env(e *retry.Env) *retry.Env {
	if e != nil {
		oc.envCp = *e
	}
	oc.envCp.Observer = &oc.obs
	return &oc.envCp
}

// permanentKey is retry.ReasonPermanent.Key(), the give-up reason of a
// final error.
const permanentKey = "permanent_error"

func (o *observer) Observe(ctx context.Context, e event.Event) {
	e.Component = "httpretry"
	e.Method = o.method
	e.Host = o.host
	if o.cl.hs == nil { // unhedged: one attempt at a time, on this goroutine
		switch e.Kind {
		case event.AttemptStart:
			o.held, o.holding = e, true // reported by sent, if it is
			return
		case event.AttemptEnd:
			if o.holding { // it was not sent
				o.holding = false
				return
			}
		case event.GaveUp:
			e.Attempt = o.cl.n // the attempts sent
		}
	}
	if e.Status == 0 && e.Kind != event.AttemptStart {
		// The loop reports an attempt's end, the retry after it and the
		// give-up right after the attempt returned, so the call's last
		// status is this attempt's (a hedged call's attempts keep theirs).
		e.Status = o.cl.statusOf(e.Attempt)
	}
	if e.Kind == event.GaveUp && e.Reason == permanentKey {
		e.Reason = o.cl.finalReason(e.Reason)
	}
	o.next.Observe(ctx, e) // outside the hedged call's lock: a hook
}

// sent reports the start of the attempt whose request is about to leave.
func (o *observer) sent(ctx context.Context) {
	if o.holding {
		o.holding = false
		o.next.Observe(ctx, o.held)
	}
}

// finalReason returns why the call's error was final, as an event reason:
// what made a retryable status final, or why the request was sent once;
// reason when neither. A hedged call's attempts share these fields: they
// are read under its lock, which is released before the observer is
// called.
func (cl *call) finalReason(reason string) string {
	if hs := cl.hs; hs != nil {
		hs.mu.Lock()
		defer hs.mu.Unlock()
	}
	switch {
	case cl.final != "":
		return cl.final
	case cl.notRetried != nil && cl.n == 1:
		return reasonKey(cl.notRetried)
	}
	return reason
}
