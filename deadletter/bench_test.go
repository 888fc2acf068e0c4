package deadletter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
)

// BenchmarkMemoryCycle measures one letter's life in the memory store: Put,
// Claim (from a queue that holds 1000 other letters, not yet due) and Done.
func BenchmarkMemoryCycle(b *testing.B) {
	ctx := context.Background()
	m, _ := deadletter.NewMemory(0)
	for i := range 1000 {
		_ = m.Put(ctx, deadletter.Letter{ID: "later-" + strconv.Itoa(i), Queue: "q", Created: t0, Due: t0.Add(time.Hour)})
	}
	l := deadletter.Letter{ID: "x", Queue: "q", Key: "k", Payload: []byte(`{"amount":1000}`), Created: t0, Due: t0}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Put(ctx, l); err != nil {
			b.Fatal(err)
		}
		got, err := m.Claim(ctx, "q", t0, 10, time.Minute)
		if err != nil || len(got) != 1 {
			b.Fatal(len(got), err)
		}
		if err := m.Done(ctx, got[0].ID, got[0].Token); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedriveAt measures a pass over a batch of 10 letters whose
// handler succeeds, per letter, on the memory store.
func BenchmarkRedriveAt(b *testing.B) {
	ctx := context.Background()
	m, _ := deadletter.NewMemory(0)
	r, _ := deadletter.NewRedriver(deadletter.Config{Store: m, Queue: "q",
		Handler: func(context.Context, deadletter.Letter) error { return nil }})
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = "l" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, id := range ids {
			_ = m.Put(ctx, deadletter.Letter{ID: id, Queue: "q", Created: t0, Due: t0})
		}
		if rep, err := r.RedriveAt(ctx, t0); err != nil || rep.Done != 10 {
			b.Fatal(rep, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/letter")
}
