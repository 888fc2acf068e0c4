package deadlettertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/deadlettertest"
)

// A store keeps the contract when a test of its package calls TestStore
// and TestHTTPSecrets, as testMemoryStore below does for the in-memory
// store; that function is what you write in a _test.go file as
// TestMyStore (it is compiled here, not run: the checks need the
// *testing.T that go test gives a test). What runs is Equal, by which a
// store's own tests compare a letter read back with the one put: times
// compare as instants, whatever location the store returns them in.
func Example() {
	testMemoryStore := func(t *testing.T) {
		m, _ := deadletter.NewMemory(0)
		deadlettertest.TestStore(t, func(*testing.T) deadletter.Store { return m })
		deadlettertest.TestHTTPSecrets(t, m, nil)
	}
	_ = testMemoryStore

	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	store, _ := deadletter.NewMemory(0)
	put := deadletter.Letter{ID: "order-42", Queue: "payments", Payload: []byte(`{"amount":1000}`), Created: t0, Due: t0}
	_ = store.Put(ctx, put)
	got, _ := store.Get(ctx, "order-42")
	fmt.Println("read back:", deadlettertest.Equal(got, put))

	elsewhere := got
	elsewhere.Created = t0.In(time.FixedZone("UTC+9", 9*60*60))
	fmt.Println("in another location:", deadlettertest.Equal(elsewhere, put), elsewhere.Created == put.Created)

	held, _ := store.Claim(ctx, "payments", t0, 1, deadlettertest.Lease)
	fmt.Println("claimed (a token, a lease end):", deadlettertest.Equal(held[0], put))
	// Output:
	// read back: true
	// in another location: true false
	// claimed (a token, a lease end): false
}
