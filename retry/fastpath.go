package retry

import "context"

// The success path of Do and (*Retrier).Do is inlined where they are
// called, so that a first attempt that succeeds costs the call of fn and a
// check of the policy, and no call of a retry function: with the zero
// Policy, the compiler folds the check to one comparison (Env == nil).
//
// Go inlines a function whose body costs at most 80, and a call in it costs
// 57, except a call of a parameter, which costs 17 (the argument may be a
// function the compiler sees once the call is inlined). A body that calls
// fn and, after a failure, the rest of the loop, costs 57 + 17 and more:
// too much. So Do and (*Retrier).Do pass their check and their slow path as
// parameters of the two functions below; at Do's call site they are
// constants again: quick is inlined, and rest is called only after a
// failure (or when quick says no).
// TestSuccessPathInlines keeps Do and (*Retrier).Do within the budget.

// firstAttempt makes the first attempt of Do if quick(p) says that p is
// valid and needs no set-up, and hands over to rest after a failure, or at
// once (with a nil error) when quick says no.
func firstAttempt(ctx context.Context, p *Policy, fn func(context.Context) error,
	quick func(*Policy) bool, rest func(*Policy, context.Context, func(context.Context) error, error) error) (err error) {
	if quick(p) {
		if err = fn(ctx); err == nil {
			return
		}
	}
	return rest(p, ctx, fn, err)
}

// retrierFirst is firstAttempt for a Retrier, whose policy was checked by
// New and whose plainness is known.
func retrierFirst(ctx context.Context, r *Retrier, fn func(context.Context) error,
	rest func(*Retrier, context.Context, func(context.Context) error, error) error) (err error) {
	if r.plain {
		if err = fn(ctx); err == nil {
			return
		}
	}
	return rest(r, ctx, fn, err)
}

// rest is Do after firstAttempt: the loop after a failed first attempt
// (err), or the whole call when quick said no (err == nil): the policy is
// checked, then run.
//
//go:noinline
func (p *Policy) rest(ctx context.Context, fn func(context.Context) error, err error) error {
	if err != nil {
		return afterFirst(ctx, p, fn, err)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if p.plain() {
		if err := fn(ctx); err != nil {
			return afterFirst(ctx, p, fn, err)
		}
		return nil
	}
	_, err = run(ctx, p, unit(fn), nil)
	return err
}

// rest is (*Retrier).Do after retrierFirst: the loop after a failed first
// attempt (err), or the whole call when the policy has guards or deadlines
// (err == nil).
//
//go:noinline
func (r *Retrier) rest(ctx context.Context, fn func(context.Context) error, err error) error {
	if err != nil {
		return afterFirst(ctx, &r.p, fn, err)
	}
	_, err = run(ctx, &r.p, unit(fn), nil)
	return err
}

// afterFirst continues the loop after a first attempt that failed. It is
// kept out of line so that the success path's frame stays small.
//
//go:noinline
func afterFirst(ctx context.Context, p *Policy, fn func(context.Context) error, err error) error {
	_, err = run(ctx, p, unit(fn), &first[struct{}]{err: err})
	return err
}
