package httpretry

import (
	"context"

	"github.com/yaoki-go/yaoki/event"
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
}

// permanentKey is retry.ReasonPermanent.Key(), the give-up reason of a
// final error.
const permanentKey = "permanent_error"

func (o *observer) Observe(ctx context.Context, e event.Event) {
	e.Component = "httpretry"
	e.Method = o.method
	e.Host = o.host
	if e.Status == 0 && e.Kind != event.AttemptStart {
		// The loop reports an attempt's end, the retry after it and the
		// give-up right after the attempt returned, so the call's last
		// status is this attempt's (a hedged call's attempts keep theirs).
		e.Status = o.cl.statusOf(e.Attempt)
	}
	if e.Kind == event.GaveUp && e.Reason == permanentKey {
		if hs := o.cl.hs; hs != nil {
			hs.mu.Lock()
			defer hs.mu.Unlock()
		}
		switch {
		case o.cl.final != "":
			e.Reason = o.cl.final
		case o.cl.notRetried != nil && o.cl.n == 1:
			e.Reason = reasonKey(o.cl.notRetried)
		}
	}
	o.next.Observe(ctx, e)
}
