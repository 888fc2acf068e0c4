package deadletter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/deadlettertest"
)

func TestMemoryStore(t *testing.T) {
	m, err := deadletter.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	deadlettertest.TestStore(t, func(*testing.T) deadletter.Store { return m })
}

func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	if _, err := deadletter.NewMemory(-1); !errors.Is(err, deadletter.ErrInvalidConfig) {
		t.Fatalf("NewMemory(-1): %v, want ErrInvalidConfig", err)
	}
	m, _ := deadletter.NewMemory(2)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b"} {
		if err := m.Put(ctx, deadletter.Letter{ID: id, Queue: "q", Created: now}); err != nil {
			t.Fatal(err)
		}
	}
	err := m.Put(ctx, deadletter.Letter{ID: "c", Queue: "q", Created: now})
	if !errors.Is(err, deadletter.ErrFull) {
		t.Fatalf("Put beyond the bound: %v, want ErrFull", err)
	}
	if m.Len() != 2 {
		t.Fatalf("Len %d after a refused Put, want 2 (nothing evicted)", m.Len())
	}
	// The same work again is not a new letter: no room needed.
	if err := m.Put(ctx, deadletter.Letter{ID: "a", Queue: "q", Created: now}); err != nil {
		t.Fatalf("Put of stored work into a full store: %v, want nil", err)
	}
}
