package backoff_test

import (
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
)

func ExampleSchedule_Delay() {
	s := backoff.Schedule{} // exponential ×2 from 50 ms, full jitter, 20 s cap
	// A draw of 0.5 lands in the middle of [0, ceiling).
	for n := 1; n <= 4; n++ {
		fmt.Println(n, s.Delay(n, 0, 0.5))
	}
	// Output:
	// 1 25ms
	// 2 50ms
	// 3 100ms
	// 4 200ms
}

func ExampleSchedule_Plan() {
	s := backoff.Schedule{Base: 100 * time.Millisecond, Multiplier: 1.5, Cap: time.Second, Jitter: backoff.Equal}
	for _, b := range s.Plan(7) {
		fmt.Printf("retry %d: %v to %v, mean %v\n", b.Retry, b.Min, b.Max, b.Mean)
	}
	// Output:
	// retry 1: 50ms to 100ms, mean 75ms
	// retry 2: 75ms to 150ms, mean 112.5ms
	// retry 3: 112.5ms to 225ms, mean 168.75ms
	// retry 4: 168.75ms to 337.5ms, mean 253.125ms
	// retry 5: 253.125ms to 506.25ms, mean 379.6875ms
	// retry 6: 379.6875ms to 759.375ms, mean 569.53125ms
	// retry 7: 500ms to 1s, mean 750ms
}
