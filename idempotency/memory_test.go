package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/idempotency/idempotencytest"
)

func TestMemoryStoreContract(t *testing.T) {
	idempotencytest.TestStore(t, func(t *testing.T) idempotency.Store {
		return newMemoryStore(t, 0)
	})
}

// newMemoryStore returns a MemoryStore of at most max records (0: the
// default).
func newMemoryStore(t *testing.T, max int) *idempotency.MemoryStore {
	t.Helper()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryConfig{MaxRecords: max})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMemoryStoreBound(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newMemoryStore(t, 3)
	id := func(i int) idempotency.ID { return idempotency.ID{Key: fmt.Sprint(i)} }
	begin := func(i int, now time.Time) error {
		_, claimed, err := s.Begin(ctx, id(i), idempotency.Fingerprint{}, "tok", now, time.Minute)
		if err == nil && !claimed {
			return errors.New("not claimed")
		}
		return err
	}
	complete := func(i int, now time.Time) {
		if err := s.Complete(ctx, id(i), "tok", idempotency.Response{Status: 200}, now, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	has := func(i int, now time.Time) bool { _, ok, _ := s.Get(ctx, id(i), now); return ok }

	// Three records in progress fill the store: a fourth key is refused,
	// since records in progress are never evicted.
	for i := 1; i <= 3; i++ {
		if err := begin(i, t0); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
	}
	if err := begin(4, t0); !errors.Is(err, idempotency.ErrStoreFull) {
		t.Fatalf("begin 4 in a full store of records in progress: got %v, want ErrStoreFull", err)
	}
	// 2 completes first, then 1: the oldest completed record (2) goes.
	complete(2, t0.Add(time.Second))
	complete(1, t0.Add(2*time.Second))
	if err := begin(4, t0.Add(3*time.Second)); err != nil {
		t.Fatalf("begin 4 with completed records to evict: %v", err)
	}
	now := t0.Add(3 * time.Second)
	if has(2, now) || !has(1, now) || !has(3, now) || !has(4, now) {
		t.Fatalf("after eviction: 1 %v 2 %v 3 %v 4 %v, want 2 evicted only", has(1, now), has(2, now), has(3, now), has(4, now))
	}
	// Once the leases of 3 and 4 have passed they are dropped before any
	// completed record.
	later := t0.Add(2 * time.Minute)
	for i := 5; i <= 6; i++ {
		if err := begin(i, later); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
	}
	if !has(1, later) || !has(5, later) || !has(6, later) || s.Len() != 3 {
		t.Fatalf("after dropping dead records: 1 %v 5 %v 6 %v len %d, want 1, 5 and 6 kept", has(1, later), has(5, later), has(6, later), s.Len())
	}
}

func TestMemoryConfigRefused(t *testing.T) {
	_, err := idempotency.NewMemoryStore(idempotency.MemoryConfig{MaxRecords: -1})
	if err == nil {
		t.Fatal("MaxRecords -1 accepted")
	}
}

// TestMemoryStoreBoundPerScope: a tenant that floods a full store with new
// keys takes records from another tenant only down to an equal share, then
// evicts its own: alice keeps her newest 5 of 10 completed records after
// mallory's 100 new keys.
func TestMemoryStoreBoundPerScope(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newMemoryStore(t, 10)
	fill := func(scope string, n int, at time.Time) {
		for i := range n {
			id := idempotency.ID{Scope: scope, Key: fmt.Sprint(i)}
			now := at.Add(time.Duration(i) * time.Millisecond)
			if _, claimed, err := s.Begin(ctx, id, idempotency.Fingerprint{}, "tok", now, time.Minute); err != nil || !claimed {
				t.Fatalf("%s: begin %d: claimed %v err %v", scope, i, claimed, err)
			}
			if err := s.Complete(ctx, id, "tok", idempotency.Response{Status: 201}, now, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := func(scope string, n int, now time.Time) (keys []int) {
		for i := range n {
			if _, ok, _ := s.Get(ctx, idempotency.ID{Scope: scope, Key: fmt.Sprint(i)}, now); ok {
				keys = append(keys, i)
			}
		}
		return keys
	}
	fill("alice", 10, t0)
	fill("mallory", 100, t0.Add(time.Second))
	now := t0.Add(2 * time.Second)
	if got := held("alice", 10, now); fmt.Sprint(got) != "[5 6 7 8 9]" {
		t.Errorf("alice's records after mallory's flood: %v, want her newest 5 (an equal share)", got)
	}
	if got := held("mallory", 100, now); fmt.Sprint(got) != "[95 96 97 98 99]" {
		t.Errorf("mallory's records: %v, want her newest 5", got)
	}
	// A third tenant still gets in, taking from the largest.
	fill("bob", 1, now)
	if len(held("bob", 1, now)) != 1 || s.Len() != 10 {
		t.Fatalf("bob's record: %v, store holds %d", held("bob", 1, now), s.Len())
	}
}
