package deadletter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/internal/configerr"
	"github.com/yaoki-go/yaoki/retry"
)

// Defaults of a Redriver's Config.
const (
	// DefaultBatch is the most letters claimed per pass.
	DefaultBatch = 10
	// DefaultLease is how long a pass's claim holds its letters, after
	// which another redriver may claim them: with DefaultBatch, 6 s per
	// letter if every letter of a full batch is to be handled.
	DefaultLease = time.Minute
	// DefaultMaxRedrives is how many failed redrives park a letter. With
	// DefaultBackoff, the fifth comes 38 to 75 minutes after the first.
	DefaultMaxRedrives = 5
	// DefaultInterval is how long Run waits between passes that found less
	// than a full batch.
	DefaultInterval = 30 * time.Second
	// StoreTimeout bounds the storing of one redrive's outcome (Done or
	// Fail), tried again while the store fails (a connection that broke, a
	// server restarting), which goes on when the pass's context ends.
	StoreTimeout = 5 * time.Second
)

// DefaultBackoff returns the wait after the n-th failed redrive when
// Config.Backoff is zero: exponential ×2 from 5 minutes, capped at 6 hours,
// with equal jitter (so that a redrive never comes back right away, and a
// fleet's redrivers spread out): after the first failure 2.5–5 min, then
// 5–10, 10–20, 20–40.
func DefaultBackoff() backoff.Schedule {
	return backoff.Schedule{
		Kind: backoff.Exponential, Jitter: backoff.Equal,
		Base: 5 * time.Minute, Multiplier: 2, Cap: 6 * time.Hour,
	}
}

// Reasons a Redriver writes in Letter.Reason.
const (
	// ReasonRedriveFailed: a redrive failed and another is due.
	ReasonRedriveFailed = "redrive failed"
	// ReasonRedrivesExhausted: MaxRedrives redrives failed; parked.
	ReasonRedrivesExhausted = "redrives exhausted"
	// ReasonPermanent: the handler's error was permanent (retry.Permanent,
	// or a *retry.Error with reason ReasonPermanent); parked.
	ReasonPermanent = "permanent error"
	// ReasonLeaseEnded: the letter's last claim ended with its lease, no
	// outcome stored (its redriver stopped or was killed, or its handler
	// outlived the lease). Store.Claim writes it when it counts that claim
	// as a failed redrive.
	ReasonLeaseEnded = "lease ended"
)

// Handler does a letter's work again, once. Its context says that it must
// not retry (retry.SingleAttempt: the redriver is the retrying layer, so
// an httpretry transport or retry.Do inside makes one attempt) and has the
// claim's lease end as its deadline: past it, another redriver may run the
// same letter, so a handler must not outlive its context. It returns nil when the work is done; an error
// made with retry.Permanent parks the letter at once, and one that carries
// a server hint (retry.After) delays the next redrive to at least the hint.
// An error that matches ErrNotAttempted adds no attempt to the letter's
// count.
type Handler func(ctx context.Context, l Letter) error

// Config configures a Redriver. Store, Queue and Handler are required;
// every other zero field means its default.
type Config struct {
	// Store holds the letters.
	Store Store
	// Queue is the queue served.
	Queue string
	// Handler redrives one letter.
	Handler Handler
	// Batch is the most letters claimed per pass. Zero: DefaultBatch.
	Batch int
	// Lease is how long a pass's claim holds its letters. They are handled
	// one after another, each with the lease end as its deadline, and a
	// letter whose turn comes after the lease ended is not started
	// (Report.Expired): its claim is ended, uncounted, and any redriver
	// claims it again. So Lease should cover Batch handlers. Zero:
	// DefaultLease.
	Lease time.Duration
	// Backoff gives the wait after the n-th failed redrive (n from 1).
	// Zero: DefaultBackoff.
	Backoff backoff.Schedule
	// MaxRedrives is how many failed redrives park a letter. Zero:
	// DefaultMaxRedrives; retry.Unlimited (-1): never.
	MaxRedrives int
	// Interval is Run's wait between passes that found less than a full
	// batch. Zero: DefaultInterval.
	Interval time.Duration
	// OnPass, if set, is called by Run after each pass, with its report
	// and error (a store that could not be reached, say): Run itself goes
	// on. It runs on Run's goroutine and must not block.
	OnPass func(Report, error)
	// Rand returns draws in [0, 1) for the backoff's jitter. Nil:
	// math/rand/v2's Float64.
	Rand func() float64
	// Observer, if set, receives an event.Redrive for each letter handled
	// (component "deadletter", Name the queue): its outcome, reason and the
	// handler's time. The otel module counts them; eventlog logs them. Nil:
	// no events.
	Observer event.Observer
}

// Redriver redrives the letters of one queue. Build it with NewRedriver.
// RedriveAt and Run are safe for concurrent use, and several redrivers may
// serve one queue of a shared store: claims keep them from handling the same
// letter at once.
type Redriver struct {
	c Config
}

// NewRedriver checks c and returns a Redriver that applies it. Every
// refusal names the field, its value and what is accepted.
func NewRedriver(c Config) (*Redriver, error) {
	switch {
	case c.Store == nil:
		return nil, configerr.Invalid(ErrInvalidConfig, "Store", nil, "the store that holds the letters")
	case c.Handler == nil:
		return nil, configerr.Invalid(ErrInvalidConfig, "Handler", nil, "the function that redrives one letter")
	case c.Queue == "" || len(c.Queue) > MaxIDBytes:
		return nil, configerr.Invalid(ErrInvalidConfig, "Queue", clip(c.Queue), fmt.Sprintf("1 to %d bytes", MaxIDBytes))
	case c.Batch < 0:
		return nil, configerr.Invalid(ErrInvalidConfig, "Batch", c.Batch, fmt.Sprintf("≥ 1, or 0 for %d", DefaultBatch))
	case c.Lease < 0:
		return nil, configerr.Invalid(ErrInvalidConfig, "Lease", c.Lease, fmt.Sprintf("> 0, or 0 for %v", DefaultLease))
	case c.MaxRedrives < retry.Unlimited:
		return nil, configerr.Invalid(ErrInvalidConfig, "MaxRedrives", c.MaxRedrives, fmt.Sprintf("≥ 1, 0 for %d, or retry.Unlimited (-1)", DefaultMaxRedrives))
	case c.Interval < 0:
		return nil, configerr.Invalid(ErrInvalidConfig, "Interval", c.Interval, fmt.Sprintf("> 0, or 0 for %v", DefaultInterval))
	}
	if err := c.Backoff.Validate(); err != nil {
		return nil, configerr.In(ErrInvalidConfig, "Backoff", err)
	}
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.MaxRedrives = cmp.Or(c.MaxRedrives, DefaultMaxRedrives)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	if c.Backoff == (backoff.Schedule{}) {
		c.Backoff = DefaultBackoff()
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return &Redriver{c: c}, nil
}

// Report says what one pass did.
type Report struct {
	Claimed int // letters claimed
	Done    int // redriven and deleted
	Failed  int // failed, due again later
	Parked  int // failed and parked (permanent, or MaxRedrives reached)
	// LeaseLost counts letters whose outcome could not be stored because
	// the claim had ended (the handler outlived its lease and another
	// claim took the letter, or an operator requeued or deleted it), and
	// those whose outcome went through on a first try whose reply was lost
	// (the second try finds the claim ended).
	LeaseLost int
	// Expired counts letters claimed and not started because the claim's
	// lease ended while the letters before them were handled (the lease is
	// too short for the batch): another redriver may hold them already.
	// The pass ends their claim, uncounted, unless another claim took them.
	Expired int
	// Deferred counts letters claimed and let go at once, unstarted and
	// uncounted, because the pass handled a letter whose last claim ended
	// with its lease alone (see RedriveAt). They are due again at once: Run
	// makes its next pass without waiting.
	Deferred int
}

// RedriveAt makes one pass at now: it claims up to Batch due letters and
// hands each to the handler, one after the other; a letter whose handler
// succeeded is deleted, one whose handler failed is stored with its outcome
// and a later Due (or parked), the backoff and any server hint counted from
// the time the handler returned (now plus the time the pass has taken). A
// letter whose Redrives reached MaxRedrives when it was claimed (its earlier
// claims ended with their lease: see Store.Claim) is parked without being
// run, so that a letter that takes its redriver down is not run forever. A
// letter whose last claim so ended (Reason ReasonLeaseEnded) is handled
// alone: the pass first lets go of the other letters it claimed
// (Report.Deferred; those it parks without running excepted), uncounted, so
// that a letter that takes its redriver down does not take the counts of
// its batch with it at every kill, and the rest of its batch is redriven,
// not parked beside it. When ctx ends it stores the outcome of the redrive
// in hand if the handler finished it (a success is not lost to a shutdown),
// ends the claims of the letters it has not started, and stops; the error
// is then ctx's. A handler cut by ctx leaves its claim to
// end with its lease (the next claim counts it). An outcome that the store
// fails to take (a broken connection, a server restarting) is tried again,
// each try within 1 s, after 50 ms, then 100, 200, 400 ms and so on, until
// StoreTimeout; a store error that remains ends the pass, with what was
// done so far.
//
// Each handler's deadline is its claim's lease end, and a letter whose
// lease has ended before its turn is not started (Report.Expired): past
// it, another redriver may be running the letter. Its claim, unless
// another has taken the letter, is ended uncounted. The lease ends are in
// the frame of now (the store computes them from it); the pass measures
// the time since its start on the process's monotonic clock, so that a now
// other than the clock's (a test's fixed instant) still gives each
// handler the time its claim has left.
func (r *Redriver) RedriveAt(ctx context.Context, now time.Time) (Report, error) {
	var rep Report
	began := time.Now()
	letters, err := r.c.Store.Claim(ctx, r.c.Queue, now, r.c.Batch, r.c.Lease)
	if err != nil {
		return rep, fmt.Errorf("deadletter: redrive %q: claim: %w", r.c.Queue, err)
	}
	rep.Claimed = len(letters)
	letters, aside := r.isolate(letters)
	if len(aside) > 0 {
		rep.Deferred = len(aside)
		if err := r.release(ctx, aside, nil); err != nil {
			return rep, r.release(ctx, letters, err)
		}
	}
	for i, l := range letters {
		if err := ctx.Err(); err != nil {
			return rep, r.release(ctx, letters[i:], err)
		}
		end := began.Add(r.leaseLeft(l, now))
		if !time.Now().Before(end) {
			// The letters were claimed together: the ones after this one
			// have ended too.
			rep.Expired += len(letters) - i
			return rep, r.release(ctx, letters[i:], nil)
		}
		redrive := l.Redrives + 1 // this redrive's number
		var start time.Time
		if r.c.Observer != nil {
			start = time.Now()
		}
		var herr error
		if r.exhausted(l) {
			// Counted claims that ended with their lease reached the
			// limit: the letter may be what stops its redrivers.
			herr = fmt.Errorf("deadletter: letter %q: %d redrives failed or ended with their lease (%d allowed): parked without another", l.ID, l.Redrives, r.c.MaxRedrives)
			l.Reason, l.Error, l.Parked = ReasonRedrivesExhausted, cut(Message(herr.Error()), MaxErrorBytes), true
		} else {
			herr = r.handle(ctx, l, end)
			if herr != nil && ctx.Err() != nil {
				// The handler stopped because the caller did: its outcome
				// says nothing about the work. Its claim ends with its
				// lease; the letters not started are let go at once.
				return rep, r.release(ctx, letters[i+1:], ctx.Err())
			}
			if herr != nil {
				// The backoff and the server's hint count from the
				// failure, not from the pass's start: a letter late in
				// the batch, or a slow answer, must not come due early.
				l = r.outcome(l, herr, now.Add(time.Since(began)))
			}
		}
		err = r.store(ctx, l, herr == nil)
		switch {
		case errors.Is(err, ErrLeaseLost):
			rep.LeaseLost++
		case err != nil:
			return rep, fmt.Errorf("deadletter: redrive %q: store the outcome of %q: %w", r.c.Queue, l.ID, err)
		case herr == nil:
			rep.Done++
		case l.Parked:
			rep.Parked++
		default:
			rep.Failed++
		}
		if r.c.Observer != nil {
			r.observe(ctx, l, redrive, herr, errors.Is(err, ErrLeaseLost), start)
		}
	}
	return rep, nil
}

// exhausted reports whether l, as claimed, has had MaxRedrives failed
// redrives: the pass parks it without running it.
func (r *Redriver) exhausted(l Letter) bool {
	return r.c.MaxRedrives > 0 && l.Redrives >= r.c.MaxRedrives
}

// isolate splits the letters of a claim into those the pass handles and
// those it lets go unstarted. A letter whose last claim ended with its
// lease (Reason ReasonLeaseEnded) may be what took that claim's redriver
// down: the first such letter still to be run is handled alone, after the
// letters that the pass parks without running, and the others are let go
// before it starts, so that if it takes this redriver down too, only its
// own claim ends with the lease and is counted. Without it, a poison letter
// would have the letters claimed with it counted at every kill and parked,
// never run, beside it.
func (r *Redriver) isolate(letters []Letter) (handle, aside []Letter) {
	suspect := slices.IndexFunc(letters, func(l Letter) bool { return l.Reason == ReasonLeaseEnded && !r.exhausted(l) })
	if suspect < 0 || len(letters) == 1 {
		return letters, nil
	}
	for i, l := range letters {
		switch {
		case i == suspect:
		case r.exhausted(l):
			handle = append(handle, l)
		default:
			aside = append(aside, l)
		}
	}
	return append(handle, letters[suspect]), aside
}

// store stores the outcome of the redrive of l: Done when it worked, Fail
// otherwise. It stores it even if the caller is stopping (a shutdown during
// a redrive that worked must not make it run again), within StoreTimeout,
// and tries again (persist) when the store failed otherwise than with
// ErrLeaseLost or ErrInvalidLetter (a connection that broke, the server
// restarting or failing over): Done and Fail hold only with the claim's
// token, so a try after one that went through, its reply lost, changes
// nothing and returns ErrLeaseLost. Without it, a letter whose redrive
// worked would stay claimed, to be redriven again once its lease ended.
func (r *Redriver) store(ctx context.Context, l Letter, done bool) error {
	return persist(context.WithoutCancel(ctx), time.Now().Add(StoreTimeout), func(tctx context.Context) error {
		if done {
			return r.c.Store.Done(tctx, l.ID, l.Token)
		}
		return r.c.Store.Fail(tctx, l)
	})
}

// Tries of persist.
const (
	// storeTry bounds one try, so that a reply that never comes (a link
	// that died without a reset) leaves time for others within
	// StoreTimeout.
	storeTry = time.Second
	// storeWait is the wait after the first failed try; it doubles after
	// each (50, 100, 200, 400 ms, ...).
	storeWait = 50 * time.Millisecond
)

// persist runs op with ctx until it succeeds or fails with ErrLeaseLost or
// ErrInvalidLetter (which another try cannot change), each try within
// storeTry, waiting storeWait after the first failure and twice as long
// after each next one, until deadline; it returns op's last error. A try
// that succeeds first costs one context, as a single bounded call would.
func persist(ctx context.Context, deadline time.Time, op func(context.Context) error) error {
	wait := storeWait
	for {
		end := time.Now().Add(storeTry)
		if end.After(deadline) {
			end = deadline
		}
		tctx, cancel := context.WithDeadline(ctx, end)
		err := op(tctx)
		cancel()
		if err == nil || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrInvalidLetter) {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		time.Sleep(min(wait, left))
		wait *= 2
	}
}

// release ends the claims on letters, which were not started, storing
// them as claimed (Fail of an unchanged letter, tried again as store
// tries an outcome, all within one StoreTimeout), so that the next claim
// does not count them as redrives that ended with their lease. A letter
// that another claim holds already is left to it. It returns cause, or the
// store's error when it failed to end a claim and cause is nil.
func (r *Redriver) release(ctx context.Context, letters []Letter, cause error) error {
	sctx, deadline := context.WithoutCancel(ctx), time.Now().Add(StoreTimeout)
	for _, l := range letters {
		err := persist(sctx, deadline, func(tctx context.Context) error { return r.c.Store.Fail(tctx, l) })
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			if cause == nil {
				cause = fmt.Errorf("deadletter: redrive %q: end the claim on %q, not started: %w", r.c.Queue, l.ID, err)
			}
			break
		}
	}
	return cause
}

// observe reports the redrive number n of l, whose handler returned herr
// after start, as an event.Redrive; l is the letter as stored after it.
func (r *Redriver) observe(ctx context.Context, l Letter, n int, herr error, leaseLost bool, start time.Time) {
	e := event.Event{Kind: event.Redrive, Component: "deadletter", Name: r.c.Queue, Key: l.Key,
		Attempt: n, Err: herr, Outcome: event.Failure, Reason: strings.ReplaceAll(l.Reason, " ", "_")}
	switch {
	case leaseLost:
		e.Reason = "lease_lost"
	case herr == nil:
		e.Outcome, e.Reason = event.Success, ""
	case l.Parked:
		e.Outcome = event.Rejected
	}
	e.Time = time.Now()
	e.Duration = e.Time.Sub(start)
	r.c.Observer.Observe(ctx, e)
}

// leaseLeft returns how long after now the claim on l ends: Lease when the
// store did not say.
func (r *Redriver) leaseLeft(l Letter, now time.Time) time.Duration {
	if l.LeaseEnd.IsZero() {
		return r.c.Lease
	}
	return l.LeaseEnd.Sub(now)
}

// handle runs the handler on l until end, its lease end, told not to retry.
func (r *Redriver) handle(ctx context.Context, l Letter, end time.Time) error {
	hctx, cancel := context.WithDeadline(retry.SingleAttempt(ctx), end)
	defer cancel()
	return r.c.Handler(hctx, l)
}

// outcome returns l after a redrive at now that failed with err.
func (r *Redriver) outcome(l Letter, err error, now time.Time) Letter {
	var ge *retry.Error
	attempts := 1
	permanent := retry.IsPermanent(err)
	if errors.As(err, &ge) {
		attempts = max(ge.Attempts, 1)
		permanent = permanent || ge.Reason == retry.ReasonPermanent
	}
	if errors.Is(err, ErrNotAttempted) {
		attempts = 0
	}
	l.Attempts = min(l.Attempts+min(attempts, MaxCount), MaxCount)
	l.Error = cut(Message(err.Error()), MaxErrorBytes)
	l.Redrives = min(l.Redrives+1, MaxCount)
	switch {
	case permanent:
		l.Reason, l.Parked = ReasonPermanent, true
	case r.c.MaxRedrives > 0 && l.Redrives >= r.c.MaxRedrives:
		l.Reason, l.Parked = ReasonRedrivesExhausted, true
	default:
		wait := r.c.Backoff.Delay(l.Redrives, 0, r.c.Rand())
		if hint, ok := retry.HintOf(err); ok && hint > wait {
			wait = hint
		}
		l.Reason, l.Due = ReasonRedriveFailed, now.Add(wait)
	}
	return l
}

// Run makes a pass (RedriveAt with the clock's time) after another until
// ctx ends, and returns ctx's error. After a pass that claimed a full
// batch it goes on at once (a backlog); otherwise it waits Interval. A
// failed pass (the store unreachable) is reported to OnPass and tried again
// after Interval. A pass that let letters go to handle one alone
// (Report.Deferred) is followed at once by the next.
func (r *Redriver) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		rep, err := r.RedriveAt(ctx, time.Now())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.c.OnPass != nil {
			r.c.OnPass(rep, err)
		}
		next := r.c.Interval
		if err == nil && (rep.Claimed == r.c.Batch || rep.Deferred > 0) {
			next = 0
		}
		t.Reset(next)
	}
}
