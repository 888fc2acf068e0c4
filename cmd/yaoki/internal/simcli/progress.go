package simcli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/sim"
)

// A sweep whose bar is off (stderr is not a terminal, no --progress) still
// says how far it is once it has run for longer than quietAfter, then
// every quietEvery: a log or a CI job then shows that a long run is alive.
const (
	quietAfter = 5 * time.Second
	quietEvery = 10 * time.Second
)

// quietProgress returns the progress of one sweep as plain lines on w,
// "herd: 40/100 runs after 12 s", written only when the sweep is long.
// now is the clock (time.Now; tests pass their own).
func quietProgress(w io.Writer, name string, now func() time.Time) sim.Progress {
	var (
		mu    sync.Mutex
		start time.Time
		last  time.Time
	)
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		if start.IsZero() {
			start = t
		}
		if t.Sub(start) < quietAfter || (!last.IsZero() && t.Sub(last) < quietEvery && done < total) {
			return
		}
		if done == total && last.IsZero() {
			return // finished before it said anything: nothing to add
		}
		last = t
		fmt.Fprintf(w, "%s: %d/%d after %.0f s\n", name, done, total, t.Sub(start).Seconds())
	}
}
