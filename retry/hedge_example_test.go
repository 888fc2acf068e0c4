package retry_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/yaoki-go/yaoki/hedge"
	"github.com/yaoki-go/yaoki/retry"
)

// A call whose first attempt hangs: after 20 ms a hedge is sent, its answer
// is returned, and the first attempt is cancelled.
func ExampleHedgeValue() {
	h, err := hedge.New(hedge.Config{Delay: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{Env: &retry.Env{Hedger: h}}
	var n atomic.Int32
	cancelled := make(chan struct{})
	v, err := retry.HedgeValue(context.Background(), p, func(ctx context.Context) (string, error) {
		if n.Add(1) == 1 {
			<-ctx.Done() // the first attempt hangs until it is cancelled
			close(cancelled)
			return "", ctx.Err()
		}
		return "the hedge's answer", nil
	}, nil)
	fmt.Println(v, err)
	<-cancelled
	fmt.Println("first attempt cancelled")
	// Output:
	// the hedge's answer <nil>
	// first attempt cancelled
}
