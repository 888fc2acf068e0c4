package sim

import (
	"fmt"
	"testing"
	"time"
)

func TestEngineOrdersEventsByTimeThenInsertion(t *testing.T) {
	var e engine
	at := []time.Duration{30, 10, 20, 10, 0, 20, 10}
	for i, d := range at {
		e.Add(simEvent{At: d, ID: int32(i)})
	}
	// Equal instants come out in the order they were added.
	want := []int32{4, 1, 3, 6, 2, 5, 0}
	for i, id := range want {
		ev, ok := e.Pop()
		if !ok {
			t.Fatalf("pop %d: queue empty, want event %d", i, id)
		}
		if ev.ID != id || ev.At != at[id] {
			t.Fatalf("pop %d: got event %d at %v, want event %d at %v", i, ev.ID, ev.At, id, at[id])
		}
		if e.Now() != ev.At {
			t.Fatalf("pop %d: Now() = %v, want the event's time %v", i, e.Now(), ev.At)
		}
	}
	if _, ok := e.Pop(); ok {
		t.Fatal("pop on an empty queue: got an event")
	}
}

func TestEngineNeverGoesBackInTime(t *testing.T) {
	var e engine
	e.Add(simEvent{At: 100})
	e.Pop()
	e.Add(simEvent{At: 50, ID: 1}) // in the past: moved to now
	ev, _ := e.Pop()
	if ev.At != 100 || e.Now() != 100 {
		t.Fatalf("event added in the past: got it at %v (now %v), want at 100", ev.At, e.Now())
	}
}

func TestEngineHeapStaysOrderedUnderRandomLoad(t *testing.T) {
	var e engine
	r := newRand(7, 7)
	for range 1000 {
		e.Add(simEvent{At: r.Exp(time.Second)})
	}
	last := time.Duration(-1)
	for n := 0; e.Len() > 0; n++ {
		ev, _ := e.Pop()
		if ev.At < last {
			t.Fatalf("pop %d: time went back from %v to %v", n, last, ev.At)
		}
		last = ev.At
		if n < 5000 { // keep adding while popping
			e.Add(simEvent{At: ev.At + r.Exp(time.Second)})
		}
	}
}

func TestEngineResetKeepsMemory(t *testing.T) {
	var e engine
	for i := range 100 {
		e.Add(simEvent{At: time.Duration(i)})
	}
	e.Pop()
	e.Reset()
	if e.Len() != 0 || e.Now() != 0 {
		t.Fatalf("after Reset: Len %d, Now %v; want 0, 0", e.Len(), e.Now())
	}
	allocs := testing.AllocsPerRun(10, func() {
		e.Reset()
		for i := range 100 {
			e.Add(simEvent{At: time.Duration(100 - i)})
		}
		for e.Len() > 0 {
			e.Pop()
		}
	})
	if allocs != 0 {
		t.Fatalf("a reused engine allocated %v times per run, want 0", allocs)
	}
}

func TestRandIsRepeatable(t *testing.T) {
	a, b := newRand(1, 2), newRand(1, 2)
	for i := range 100 {
		x, y := a.AbsNormal(10*time.Millisecond, 2*time.Millisecond), b.AbsNormal(10*time.Millisecond, 2*time.Millisecond)
		if x != y || x < 0 {
			t.Fatalf("draw %d: %v and %v from the same seed (want equal and ≥ 0)", i, x, y)
		}
	}
	a.Seed(1, 2)
	c := newRand(1, 2)
	if a.Float64() != c.Float64() {
		t.Fatal("Seed did not restart the source")
	}
	if d := newRand(1, 3).Exp(time.Second); d == newRand(1, 2).Exp(time.Second) {
		t.Fatal("two streams gave the same first draw")
	}
}

func TestInstant(t *testing.T) {
	if got := instant(1500 * time.Millisecond); !got.Equal(time.Date(2000, 1, 1, 0, 0, 1, 5e8, time.UTC)) {
		t.Fatalf("Instant(1.5s) = %v, want 2000-01-01T00:00:01.5Z", got)
	}
}

// The engine runs events in time order; a scenario is a loop over them.
func Example_engine() {
	const (
		ping uint8 = iota
		pong
	)
	var e engine
	e.Add(simEvent{At: 30 * time.Millisecond, Kind: ping, ID: 2})
	e.Add(simEvent{At: 10 * time.Millisecond, Kind: ping, ID: 1})
	for {
		ev, ok := e.Pop()
		if !ok {
			break
		}
		switch ev.Kind {
		case ping:
			fmt.Printf("%v: ping from %d\n", e.Now(), ev.ID)
			e.Add(simEvent{At: e.Now() + 5*time.Millisecond, Kind: pong, ID: ev.ID})
		case pong:
			fmt.Printf("%v: pong to %d\n", e.Now(), ev.ID)
		}
	}
	// Output:
	// 10ms: ping from 1
	// 15ms: pong to 1
	// 30ms: ping from 2
	// 35ms: pong to 2
}
