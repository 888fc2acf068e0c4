package window_test

import (
	"fmt"
	"time"

	"github.com/yaoki-go/yaoki/internal/window"
)

// A counter over the last 10 s, sliding in steps of 1 s.
func ExampleCounter() {
	c := window.NewCounter(10*time.Second, 10)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c.Add(t0, 3)
	c.Add(t0.Add(4*time.Second), 2)
	fmt.Println(c.Sum(t0.Add(9 * time.Second)))  // both in the window
	fmt.Println(c.Sum(t0.Add(10 * time.Second))) // the first bucket left it
	fmt.Println(c.Sum(t0.Add(14 * time.Second))) // so did the second
	// Output:
	// 5
	// 2
	// 0
}
