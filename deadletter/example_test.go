package deadletter_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// A payment whose retries ran out goes to the dead letters instead of being
// lost; a redriver charges it again later, once the partner is back, with
// the same idempotency key.
func Example() {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	store, _ := deadletter.NewMemory(0)

	partnerUp := false
	charge := func(ctx context.Context, key string) error {
		if !partnerUp {
			return errors.New("partner: 503 Service Unavailable")
		}
		fmt.Println("charged once with key", key)
		return nil
	}

	// The call gives up after its 3 attempts (no waits in this example).
	p, _ := retrytest.NoWait(retry.Policy{})
	err := retry.Do(ctx, p, func(ctx context.Context) error { return charge(ctx, "order-42") })
	l, perr := deadletter.Capture(ctx, store, deadletter.Letter{
		ID: "order-42", Queue: "payments", Key: "order-42", Payload: []byte(`{"amount":1000}`),
	}, err, now)
	fmt.Println("captured:", l.ID, "-", l.Reason, "after", l.Attempts, "attempts;", perr)

	r, _ := deadletter.NewRedriver(deadletter.Config{
		Store: store, Queue: "payments",
		Handler: func(ctx context.Context, l deadletter.Letter) error { return charge(ctx, l.Key) },
	})
	partnerUp = true
	rep, _ := r.RedriveAt(ctx, now.Add(time.Minute))
	fmt.Printf("redriven: %d of %d\n", rep.Done, rep.Claimed)
	c, _ := store.Count(ctx, "payments", now.Add(time.Minute))
	fmt.Println("letters left:", c.Total())
	// Output:
	// captured: order-42 - attempts exhausted after 3 attempts; <nil>
	// charged once with key order-42
	// redriven: 1 of 1
	// letters left: 0
}
