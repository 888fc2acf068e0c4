package httpretry

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// Hedged requests (Transport.Hedge): a request that is safe to send twice
// and has not answered after the hedge delay is sent again while the first
// attempt runs; the first answer that ends the call wins (a success, or a
// status or error that is final), the other attempts are cancelled and
// their responses drained and closed. Safe to send twice: an idempotent
// method, or a request with an Idempotency-Key (every copy carries the
// same key), whose body, if any, can be replayed (GetBody, or buffered).
// Other requests are sent one attempt at a time, as without hedging.

// hedger returns the hedge.Hedger of one destination host: a new one from
// the Transport's Hedge configuration, or the policy's own Env.Hedger
// (shared by every host).
func (c *config) hedgerFor(e *retry.Env) retry.Hedger {
	if e != nil && e.Hedger != nil {
		return e.Hedger
	}
	h, err := hedge.New(*c.hedge) // validated by build
	if err != nil {
		panic("httpretry: a validated hedge configuration became invalid: " + err.Error())
	}
	return h
}

// hedgedRetrier returns r's policy with a Hedger, as a Retrier.
func (c *config) hedgedRetrier(r *retry.Retrier) *retry.Retrier {
	p := r.Policy()
	p.Env = p.Env.Clone()
	p.Env.Hedger = c.hedgerFor(p.Env)
	hr, err := retry.New(p)
	if err != nil {
		panic("httpretry: a validated policy became invalid: " + err.Error()) // unreachable: only the Hedger changed
	}
	return hr
}

// hedgedRetrierFor returns the retrier that hedges req: its host's.
func (c *config) hedgedRetrierFor(req *http.Request) *retry.Retrier {
	return c.hosts.get(hostKey(req.URL.Host)).hedged
}

// hedgeable reports whether the call may be hedged: it may be sent more
// than once, its body (if any) can be sent again, and no outer layer
// retries it.
func (cl *call) hedgeable() bool {
	req := cl.req
	if cl.notRetried != nil || !cl.bodyOK || cl.firstBody != nil || cl.c.attempts == 1 {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil && cl.buf == nil {
		return false
	}
	return !retry.IsSingleAttempt(req.Context())
}

// hedgeState is what the attempts of a hedged call share besides the call:
// the lock over the call's fields, and each attempt's status.
type hedgeState struct {
	mu       sync.Mutex
	statuses []int // by attempt number, from 1; 0 while unknown
	// pending counts the attempts sent that have not failed: those whose
	// answer may still end the call. failed is closed (and cleared) when
	// one of them fails, for an unbuilt attempt waiting on them.
	pending int
	failed  chan struct{}
	// unbuilt counts the attempts the loop made whose request could not
	// be built: they were not sent.
	unbuilt int
	// flying holds the bounds of the attempts sent whose RoundTrip has not
	// returned, for hedged to cancel when the call ends; in flyingBuf for
	// the first attempt and the default 2 hedges, so that they cost no
	// allocation.
	flying    []*bound
	flyingBuf [3]*bound
}

// land removes b from the attempts in flight, under hs.mu.
func (hs *hedgeState) land(b *bound) {
	for i, f := range hs.flying {
		if f == b {
			hs.flying = append(hs.flying[:i], hs.flying[i+1:]...)
			return
		}
	}
}

// answer is what an attempt of a hedged call returns: the response, and
// its *StatusError when its status is one that is retried.
type answer struct {
	resp *http.Response
	se   *StatusError
}

// release drains and closes the answer's response, once.
func (a answer) release() {
	if a.se != nil {
		a.se.discard()
		return
	}
	drain(a.resp)
}

// hedged runs the call through its host's hedging retrier. cl is a copy on
// the heap (see run): its attempts run concurrently and share it under
// cl.hs.mu. oc is cl's observedCall when the Transport has an observer
// (cl is then &oc.call), nil otherwise.
func (cl *call) hedged(oc *observedCall) (*http.Response, error) {
	cl.hs = new(hedgeState)
	cl.hs.flying = cl.hs.flyingBuf[:0]
	r := cl.c.hedgedRetrierFor(cl.req)
	var (
		a   answer
		err error
	)
	if oc != nil {
		p := r.Policy()
		p.Env = oc.env(p.Env)
		a, err = retry.HedgeValue(cl.req.Context(), p, cl.hedgeAttempt, answer.release)
	} else {
		a, err = retry.HedgeValueWith(cl.req.Context(), r, cl.hedgeAttempt, answer.release)
	}
	cl.hs.mu.Lock()
	defer cl.hs.mu.Unlock()
	// The loop has cancelled the attempts still in flight, but that
	// reaches their requests through a context.AfterFunc, whose goroutine
	// may run after the caller has read its answer and freed a connection
	// that a waiting hedge would then take and send its request on: end
	// their requests now, before the call returns.
	for _, b := range cl.hs.flying {
		cause := context.Canceled
		if b.follows != nil && context.Cause(b.follows) != nil {
			cause = context.Cause(b.follows)
		}
		b.cancel(cause)
	}
	cl.hs.flying = nil
	if !cl.sent {
		closeBody(cl.req) // no attempt was made: a guard refused the first
	}
	if err == nil {
		return a.resp, nil
	}
	var re *retry.Error
	if a.se != nil && !a.se.done && errors.As(err, &re) && re.Reason != retry.ReasonCancelled {
		// Retries ended on a status: hand over the last answer, untouched.
		return a.resp, nil
	}
	a.release()
	return nil, cl.fail(err)
}

// hedgeAttempt is attempt for a hedged call: it may run concurrently with
// the call's other attempts, so it numbers itself and builds its request
// under cl.hs.mu, and keeps its status by its number. An attempt that
// starts after the caller's context has ended (as in attempt), or after
// the loop cancelled it (the call ended before it started), is not sent
// and not counted.
func (cl *call) hedgeAttempt(actx context.Context) (answer, error) {
	var b *bound
	ctx := cl.req.Context()
	if actx != ctx || cl.c.attemptTimeout > 0 {
		b = cl.bind(actx)
		ctx = b.ctx
	}
	hs := cl.hs
	hs.mu.Lock()
	// Checked under hs.mu: an attempt is counted before the call's error
	// is built (under hs.mu, after the loop cancelled the attempts it
	// leaves), or not at all.
	if caller := cl.req.Context(); caller.Err() != nil || actx.Err() != nil {
		cl.unsent = true
		hs.mu.Unlock()
		cause := context.Cause(actx)
		if caller.Err() != nil {
			cause = context.Cause(caller)
		}
		if b != nil {
			b.release(nil, cause)
		}
		return answer{}, cause
	}
	cl.n++
	n := cl.n
	req, err := cl.request(ctx)
	hs.statuses = append(hs.statuses, 0)
	if err != nil {
		cl.unsent = true
		hs.unbuilt++
	} else {
		hs.pending++
		if b != nil {
			hs.flying = append(hs.flying, b)
		}
	}
	hs.mu.Unlock()
	if err != nil {
		if b != nil {
			b.release(nil, err)
		}
		return answer{}, cl.unbuiltAttempt(actx, err)
	}
	resp, err := cl.c.base.RoundTrip(req)
	if err == nil && cl.c.readBody > 0 && !cl.retries(resp) {
		if err = cl.c.readAhead(resp); err != nil {
			resp = nil
		}
	}
	if b != nil {
		hs.mu.Lock()
		hs.land(b)
		hs.mu.Unlock()
		resp, err = b.release(resp, err)
	}
	if err != nil {
		if resp != nil {
			drain(resp) // a RoundTripper must not return both
		}
		hs.mu.Lock()
		hs.fail()
		hs.mu.Unlock()
		return answer{}, err
	}
	se := (*StatusError)(nil)
	if cl.retries(resp) {
		se = &StatusError{Code: resp.StatusCode, Status: resp.Status, Hint: -1, req: cl.req, resp: resp}
	}
	dnr := se != nil && cl.c.dnrHdr != "" && doNotRetry(resp.Header, cl.c.dnrHdr)
	hs.mu.Lock()
	hs.statuses[n-1] = resp.StatusCode
	cl.lastStatus = resp.StatusCode
	if dnr {
		cl.final = "do_not_retry"
	} else if se != nil {
		hs.fail()
	}
	hs.mu.Unlock()
	switch {
	case se == nil:
		return answer{resp: resp}, nil
	case dnr:
		return answer{resp, se}, retry.Permanent(se)
	}
	se.Hint = hint(resp, time.Now())
	return answer{resp, se}, se
}

// fail records, under hs.mu, that a pending attempt failed, and wakes an
// unbuilt attempt waiting on it.
func (hs *hedgeState) fail() {
	hs.pending--
	if hs.failed != nil {
		close(hs.failed)
		hs.failed = nil
	}
}

// unbuiltAttempt is the outcome of an attempt of a hedged call whose
// request could not be built (the caller's GetBody failed): it was not
// sent. While attempts sent before it may still end the call, it waits for
// them, so that their answers decide: it returns the cause of actx when the
// loop cancels it (another attempt won, or the call ended). Once none may,
// it ends the call with err, as an unbuilt attempt of a call that is not
// hedged does.
func (cl *call) unbuiltAttempt(actx context.Context, err error) error {
	hs := cl.hs
	hs.mu.Lock()
	for hs.pending > 0 {
		if hs.failed == nil {
			hs.failed = make(chan struct{})
		}
		failed := hs.failed
		hs.mu.Unlock()
		select {
		case <-failed:
		case <-actx.Done():
			return context.Cause(actx)
		}
		hs.mu.Lock()
	}
	hs.mu.Unlock()
	return retry.Permanent(err)
}

// statusOf returns the status of attempt n (from 1) of a hedged call, or,
// for a call that is not hedged, the last attempt's status.
func (cl *call) statusOf(n int) int {
	hs := cl.hs
	if hs == nil {
		return cl.status
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if n >= 1 && n <= len(hs.statuses) {
		return hs.statuses[n-1]
	}
	return 0
}
