package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/event"
)

// MetricDeadLetters is the gauge of dead letters per queue and state.
const MetricDeadLetters = "yaoki.deadletter.letters"

// AttrDeadLetterState is the state attribute of MetricDeadLetters:
// "waiting", "due", "held" or "parked" (deadletter.Counts).
const AttrDeadLetterState = "yaoki.deadletter.state"

// CountTimeout bounds the stores' Count calls at a collection (they run at
// once), so that slow or unreachable stores delay a scrape by no more than
// this, however many queues are tracked.
const CountTimeout = 2 * time.Second

// deadLetters is the dead-letter gauge and the queues it reads.
type deadLetters struct {
	gauge metric.Int64ObservableGauge

	mu     sync.Mutex
	queues map[string]*trackedQueue
}

type trackedQueue struct {
	store deadletter.Store
	opts  [4][]metric.ObserveOption // waiting, due, held, parked
}

func (d *deadLetters) register(m metric.Meter) error {
	d.queues = make(map[string]*trackedQueue)
	var err error
	d.gauge, err = m.Int64ObservableGauge(MetricDeadLetters, metric.WithUnit("{letter}"),
		metric.WithDescription("Dead letters, by queue and state: waiting (not due yet), due, held by a redrive, parked (waiting for an operator)."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(d.observe, d.gauge)
	return err
}

// observe counts every tracked queue at once, all bounded by CountTimeout,
// outside the lock. A store that fails leaves its queue out of this collection and
// its error in the SDK's error handler.
func (d *deadLetters) observe(ctx context.Context, o metric.Observer) error {
	d.mu.Lock()
	type read struct {
		queue string
		t     *trackedQueue
	}
	reads := make([]read, 0, len(d.queues))
	for q, t := range d.queues {
		reads = append(reads, read{q, t})
	}
	d.mu.Unlock()
	// The queues are counted at once, so that stores that do not answer
	// (a database down) hold the collection for CountTimeout in all, not
	// for CountTimeout each: a scrape then ends before its own timeout and
	// shows everything else.
	now := time.Now()
	cctx, cancel := context.WithTimeout(ctx, CountTimeout)
	defer cancel()
	counts := make([]deadletter.Counts, len(reads))
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// On this goroutine, a store's panic would end the program.
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("otel: counting the dead letters of queue %q: the store panicked: %v (left out of this collection)", r.queue, p)
				}
			}()
			counts[i], errs[i] = r.t.store.Count(cctx, r.queue, now)
		}()
	}
	wg.Wait()
	for i, r := range reads {
		if errs[i] != nil {
			continue
		}
		c := counts[i]
		for j, n := range [4]int{c.Waiting, c.Due, c.Held, c.Parked} {
			o.ObserveInt64(d.gauge, int64(n), r.t.opts[j]...)
		}
	}
	return errors.Join(errs...)
}

// TrackDeadLetters reports the letters of queue in s on the
// yaoki.deadletter.letters gauge, one series per state (yaoki.name = the
// queue, yaoki.deadletter.state = waiting, due, held or parked): at each
// collection it calls s.Count (one query for a database store), at the
// same time as the other tracked queues', bounded by CountTimeout; a Count
// that fails or panics leaves the queue out of that collection and tells
// the SDK's error handler. Alert on parked > 0: that work waits for an
// operator.
// Tracking a queue again replaces the earlier store. The returned function
// stops tracking.
func (o *Observer) TrackDeadLetters(queue string, s deadletter.Store) (untrack func()) {
	t := &trackedQueue{store: s}
	for i, state := range [4]string{"waiting", "due", "held", "parked"} {
		t.opts[i] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String(event.AttrName, queue), attribute.String(AttrDeadLetterState, state)))}
	}
	return track(&o.deadLetters.mu, o.deadLetters.queues, queue, t, nil)
}
