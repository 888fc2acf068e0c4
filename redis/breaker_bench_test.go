package redis_test

import (
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/redis/internal/redistest"
	"github.com/yaoki-go/yaoki/retry"
)

// BenchmarkBreakerClosed: AllowAt+DoneAt of a success when the fleet is not
// open, after a sync (no I/O: one atomic load before the local breaker's),
// beside the local breaker alone.
func BenchmarkBreakerClosed(b *testing.B) {
	srv := redistest.Start(b)
	fleet := newProc(b, srv.Client(b), "payments", nil)
	if err := fleet.SyncAt(b.Context(), t0); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		br   retry.Breaker
	}{{"local", newLocal(b, "payments")}, {"fleet", fleet}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tk, err := c.br.AllowAt(t0, false)
				if err != nil {
					b.Fatal(err)
				}
				c.br.DoneAt(t0, tk, 0, nil)
			}
		})
	}
}

// BenchmarkBreakerFleetOpen: AllowAt refusing because another process
// tripped (the local breaker is closed and is not asked).
func BenchmarkBreakerFleetOpen(b *testing.B) {
	srv := redistest.Start(b)
	tripped := newProc(b, srv.Client(b), "payments", nil)
	for range 20 {
		tk, _ := tripped.AllowAt(t0, false)
		tripped.DoneAt(t0, tk, 0, down)
	}
	br := newProc(b, srv.Client(b), "payments", nil)
	if err := tripped.SyncAt(b.Context(), t0); err != nil {
		b.Fatal(err)
	}
	if err := br.SyncAt(b.Context(), t0); err != nil {
		b.Fatal(err)
	}
	now := t0.Add(time.Second)
	if _, err := br.AllowAt(now, false); err == nil {
		b.Fatal("allowed while the fleet is open")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.AllowAt(now, false); err == nil {
			b.Fatal("allowed while the fleet is open")
		}
	}
}

// BenchmarkBreakerSync: one SyncAt, one round trip (EVALSHA) to a
// redis-server on loopback, with the local breaker closed (nothing to
// publish) or open (its period is sent at every sync; Redis writes it the
// first time only).
func BenchmarkBreakerSync(b *testing.B) {
	srv := redistest.Start(b)
	idle := newProc(b, srv.Client(b), "idle", nil)
	open := newProc(b, srv.Client(b), "open", nil)
	for range 20 {
		tk, _ := open.AllowAt(t0, false)
		open.DoneAt(t0, tk, 0, down)
	}
	b.Run("closed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := idle.SyncAt(b.Context(), t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := open.SyncAt(b.Context(), t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
