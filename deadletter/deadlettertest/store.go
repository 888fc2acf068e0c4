// Package deadlettertest checks that a deadletter.Store keeps its contract:
// TestStore runs the same steps on stepped time against any store (the
// in-memory one, PostgreSQL's, or a user's own), so that all of them behave
// alike; TestHTTPSecrets checks that a store holds no credential of the
// HTTP requests httpletter keeps in it.
package deadlettertest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/deadletter"
)

// Lease is the lease TestStore claims with.
const Lease = time.Minute

// TestStore runs the store contract against newStore's store: one subtest
// per behaviour. Each uses queues and IDs of its own, unique per run, so
// newStore may return the same store every time (one server for the whole
// run). Times are whole seconds in UTC (stores may keep less than
// nanoseconds), from an arbitrary instant that the store must decide by.
func TestStore(t *testing.T, newStore func(t *testing.T) deadletter.Store) {
	c := &contract{newStore: newStore, run: time.Now().UnixNano(), t0: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, b := range []struct {
		name string
		// test gets the subtest's store, and a queue and an ID prefix
		// of its own (names).
		test func(t *testing.T, c *contract, s deadletter.Store, queue, prefix string)
	}{
		{"put then get returns the letter without a claim", testPutGet},
		{"put of the same work again changes nothing", testPutSameWork},
		{"put of other work under a stored ID is refused", testPutConflict},
		{"invalid letters are refused and not stored", testPutInvalid},
		{"messages are kept as text", testMessages},
		{"returned letters share nothing with the store", testNoSharing},
		{"claim takes due letters of its queue, earliest first", testClaimOrder},
		{"a claim ends with its lease, and its token with it", testLeaseEnds},
		{"a claim ended with its lease is counted up to MaxCount", testLeaseEndsAtMaxCount},
		{"done after the lease ended, unclaimed since, deletes", testDoneAfterLease},
		{"fail stores the outcome and ends the claim", testFail},
		{"a parked letter is never claimed", testParkedNotClaimed},
		{"fail refuses an invalid outcome", testFailInvalid},
		{"requeue unparks and resets redrives", testRequeue},
		{"requeue ends a claim", testRequeueEndsClaim},
		{"delete", testDelete},
		{"list pages through a queue in ID order", testListPages},
		{"list pages see every letter once while others change", testListPagesWhileChanging},
		{"list of every queue", testListEveryQueue},
		{"count", testCount},
		{"bad arguments", testBadArguments},
		{"concurrent claims take every letter once", testConcurrentClaims},
	} {
		t.Run(b.name, func(t *testing.T) {
			queue, prefix := c.names(t)
			b.test(t, c, c.newStore(t), queue, prefix)
		})
	}
}

// contract is what every behaviour of TestStore shares: the store maker,
// a number unique to the run and the instant times start from.
type contract struct {
	newStore func(t *testing.T) deadletter.Store
	run      int64
	t0       time.Time
}

// names returns a queue and an ID prefix unique to the subtest and the
// run, with bytes that need care in a query.
func (c *contract) names(t *testing.T) (queue, prefix string) {
	n := fmt.Sprintf("%s/%d", t.Name(), c.run)
	return "queue 'q' \\ " + n, "id \"é\" " + n + "/"
}

// letter returns a letter of queue due at due, with every field set.
func (c *contract) letter(queue, id string, due time.Time) deadletter.Letter {
	return deadletter.Letter{
		ID: id, Queue: queue, Key: "key-" + id, Payload: []byte(`{"charge":"` + id + `"}`),
		Reason: "attempts exhausted", Error: "partner: 503 Service Unavailable", Attempts: 3,
		Created: c.t0.Add(-time.Hour), Due: due,
	}
}

func put(t *testing.T, s deadletter.Store, l deadletter.Letter) {
	t.Helper()
	if err := s.Put(t.Context(), l); err != nil {
		t.Fatalf("Put(%q): %v", l.ID, err)
	}
}

func claim(t *testing.T, s deadletter.Store, queue string, now time.Time, max int) []deadletter.Letter {
	t.Helper()
	got, err := s.Claim(t.Context(), queue, now, max, Lease)
	if err != nil {
		t.Fatalf("Claim at %v: %v", now, err)
	}
	return got
}

func ids(ls []deadletter.Letter) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

// Equal reports whether two letters are equal field by field, comparing
// times with Equal (stores may return another location) and treating a nil
// and an empty Payload alike.
func Equal(a, b deadletter.Letter) bool {
	return a.ID == b.ID && a.Queue == b.Queue && a.Key == b.Key && bytes.Equal(a.Payload, b.Payload) &&
		a.Reason == b.Reason && a.Error == b.Error && a.Attempts == b.Attempts && a.Redrives == b.Redrives &&
		a.Created.Equal(b.Created) && a.Due.Equal(b.Due) && a.Parked == b.Parked &&
		a.Token == b.Token && a.LeaseEnd.Equal(b.LeaseEnd)
}
