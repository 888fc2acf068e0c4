package idempotency

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestMemoryStoreLists runs random transitions over a small store and
// checks after each that its two kinds of list agree with its map.
func TestMemoryStoreLists(t *testing.T) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	s, _ := NewMemoryStore(MemoryConfig{MaxRecords: 8})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 5000 {
		now = now.Add(time.Duration(rnd.IntN(400)) * time.Millisecond)
		id := ID{Scope: fmt.Sprint(rnd.IntN(3)), Key: fmt.Sprint(rnd.IntN(12))}
		switch rnd.IntN(4) {
		case 0:
			_, _, _ = s.Begin(ctx, id, Fingerprint{}, "t", now, 10*time.Second)
		case 1:
			_ = s.Extend(ctx, id, "t", now, 10*time.Second)
		case 2:
			_ = s.Complete(ctx, id, "t", Response{Status: 201}, now, time.Minute)
		case 3:
			_ = s.Release(ctx, id, "t")
		}
		if err := s.check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

func (s *MemoryStore) check() error {
	n := 0
	for e := s.all.head; e != nil; e = e.links[inStore].next {
		if next := e.links[inStore].next; s.m[e.id] != e || (next != nil && next.links[inStore].prev != e) || (next == nil && s.all.tail != e) {
			return fmt.Errorf("store list broken at %v", e.id)
		}
		n++
	}
	if n != len(s.m) {
		return fmt.Errorf("store list holds %d, map %d", n, len(s.m))
	}
	total := 0
	for name, sc := range s.scopes {
		k := 0
		for e := sc.list.head; e != nil; e = e.links[inScope].next {
			if next := e.links[inScope].next; e.scope != sc || e.id.Scope != name || s.m[e.id] != e || (next != nil && next.links[inScope].prev != e) || (next == nil && sc.list.tail != e) {
				return fmt.Errorf("scope %q list broken at %v", name, e.id)
			}
			k++
		}
		if k != sc.n || k == 0 {
			return fmt.Errorf("scope %q: list holds %d, count %d", name, k, sc.n)
		}
		total += k
	}
	if total != len(s.m) {
		return fmt.Errorf("scopes hold %d, map %d", total, len(s.m))
	}
	return nil
}
