package peersbench

import (
	"fmt"
	"time"
)

// yaoki's adapter runs an op that fails twice with the scenarios'
// transient error: three attempts in all, within the policy every library
// is given.
func ExampleRetriers() {
	for _, r := range Retriers() {
		if r.Lib != "yaoki" {
			continue
		}
		calls := 0
		op := func() error {
			if calls++; calls < 3 {
				return ErrTransient
			}
			return nil
		}
		call := r.New(RetryPolicy{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}, op)
		fmt.Println(call(), calls)
	}
	// Output: <nil> 3
}
