package retry_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// outcomes is a breaker and a throttle that keep what they are told of
// each attempt's end.
type outcomes struct {
	mu        sync.Mutex
	n         uint64
	ends      map[uint64]error // by ticket: the attempt's number
	throttled []bool
}

func (o *outcomes) AllowAt(time.Time, bool) (uint64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	return o.n, nil
}

func (o *outcomes) DoneAt(_ time.Time, tk uint64, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ends == nil {
		o.ends = map[uint64]error{}
	}
	o.ends[tk] = err
}

func (o *outcomes) AdmitAt(time.Time) (time.Duration, error) { return 0, nil }

func (o *outcomes) RecordAt(_ time.Time, throttled bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.throttled = append(o.throttled, throttled)
}

// TestHedgeLoserAnswerReported: the first attempt is answered "429,
// overloaded" after the winning hedge's answer is in, but before the
// driver, held up by its observer, has read either: the call ends with the
// hedge's answer, and the first attempt, whose answer came before it was
// cancelled, is reported as what it was: the breaker is told its error,
// the throttle that the server is overloaded, the observer its outcome
// (throttled). It was reported cancelled: the breaker was told
// context.Canceled (which it ignores) and the throttle nothing, so an
// overloaded dependency's answers went unseen when a hedge won.
func TestHedgeLoserAnswerReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		overloaded := retry.Throttling(errors.New("429"))
		other := errors.New("reset")
		// Attempt 1 answers 429 at 160ms; the hedge sent at 50ms answers
		// at 150ms; the hedge sent at 100ms fails at 110ms, and the
		// driver's report of it is held until 210ms.
		s := &script{lat: []time.Duration{160 * time.Millisecond, 100 * time.Millisecond, 10 * time.Millisecond},
			errs: []error{overloaded, nil, other}}
		obs := &stall{n: 3, d: 100 * time.Millisecond}
		g := &outcomes{}
		p := retry.Policy{Env: &retry.Env{Breaker: g, Throttle: g, Observer: obs,
			Hedger: fixedHedger(t, 50*time.Millisecond, 2)}}
		s.answers(t, p, 2, 210*time.Millisecond)
		synctest.Wait() // the loser is collected
		g.mu.Lock()
		defer g.mu.Unlock()
		if err := g.ends[1]; !errors.Is(err, overloaded) {
			t.Errorf("breaker told %v of attempt 1, want its 429", err)
		}
		if n := len(g.throttled); n != 3 || !g.throttled[2] {
			t.Errorf("throttle told %v, want three answers, the last (attempt 1's) an overload", g.throttled)
		}
		var first []event.Event
		for _, e := range obs.of(event.AttemptEnd) {
			if e.Attempt == 1 {
				first = append(first, e)
			}
		}
		if len(first) != 1 || first[0].Outcome != event.Throttled || first[0].Duration != 160*time.Millisecond {
			t.Errorf("attempt 1's ends %+v, want one, throttled, after 160ms", first)
		}
	})
}
