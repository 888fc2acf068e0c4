package deadletter

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/internal/configerr"
)

// DefaultMaxLetters is the number of letters a Memory holds when its max is
// zero.
const DefaultMaxLetters = 10000

// Memory is a Store in the process's memory, for tests and for a single
// process that may lose its letters when it stops. It holds at most its max
// letters; Put beyond that returns ErrFull (nothing is evicted: a dead
// letter is never dropped silently). Claim scans the queue's letters, and
// List and Count every letter, so they cost time in proportion to them. Safe for concurrent use.
type Memory struct {
	max int

	mu      sync.Mutex
	letters map[string]*Letter            // by ID
	queues  map[string]map[string]*Letter // by queue, then ID
	claims  uint64                        // numbers the tokens
}

// NewMemory returns an empty Memory that holds at most max letters (0:
// DefaultMaxLetters). A negative max is refused.
func NewMemory(max int) (*Memory, error) {
	if max < 0 {
		return nil, configerr.Invalid(ErrInvalidConfig, "max", max, fmt.Sprintf("≥ 0 (0 means %d)", DefaultMaxLetters))
	}
	if max == 0 {
		max = DefaultMaxLetters
	}
	return &Memory{max: max, letters: make(map[string]*Letter), queues: make(map[string]map[string]*Letter)}, nil
}

// Len returns the number of letters held.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.letters)
}

// copyOf returns a copy of l that shares nothing with it.
func copyOf(l *Letter) Letter {
	c := *l
	c.Payload = slices.Clone(l.Payload)
	return c
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, l Letter) error {
	if err := l.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.letters[l.ID]; ok {
		if old.same(&l) {
			return nil
		}
		return fmt.Errorf("%w: put %q", ErrConflict, l.ID)
	}
	if len(m.letters) >= m.max {
		return fmt.Errorf("%w: put %q: %d letters held, the most this store holds", ErrFull, l.ID, len(m.letters))
	}
	c := copyOf(&l)
	c.Token, c.LeaseEnd = "", time.Time{}
	c.Reason, c.Error = Message(c.Reason), Message(c.Error)
	m.letters[l.ID] = &c
	q := m.queues[l.Queue]
	if q == nil {
		q = make(map[string]*Letter)
		m.queues[l.Queue] = q
	}
	q[l.ID] = &c
	return nil
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, queue string, now time.Time, max int, lease time.Duration) ([]Letter, error) {
	if err := claimArgs(max, lease); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []*Letter
	for _, l := range m.queues[queue] {
		if claimable(l, now) {
			due = append(due, l)
		}
	}
	slices.SortFunc(due, func(a, b *Letter) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID))
	})
	due = due[:min(len(due), max)]
	out := make([]Letter, len(due))
	for i, l := range due {
		if l.Token != "" {
			// Its last claim ended with its lease, no outcome stored.
			l.Attempts = min(l.Attempts+1, MaxCount)
			l.Redrives = min(l.Redrives+1, MaxCount)
			l.Reason = ReasonLeaseEnded
		}
		m.claims++
		l.Token = fmt.Sprintf("m%d", m.claims)
		l.LeaseEnd = now.Add(lease)
		out[i] = copyOf(l)
	}
	return out, nil
}

// claimArgs checks Claim's max and lease.
func claimArgs(max int, lease time.Duration) error {
	if max < 1 {
		return fmt.Errorf("%w: claim of %d letters: want ≥ 1", ErrInvalidLetter, max)
	}
	if lease <= 0 {
		return fmt.Errorf("%w: claim with lease %v: want > 0", ErrInvalidLetter, lease)
	}
	return nil
}

// claimable reports whether a Claim at now may take l.
func claimable(l *Letter, now time.Time) bool {
	return !l.Parked && !l.Due.After(now) && (l.Token == "" || !l.LeaseEnd.After(now))
}

// held returns the letter id if token holds it.
func (m *Memory) held(id, token string) (*Letter, error) {
	l, ok := m.letters[id]
	if !ok || token == "" || l.Token != token {
		return nil, fmt.Errorf("%w: %q", ErrLeaseLost, id)
	}
	return l, nil
}

// Done implements Store.
func (m *Memory) Done(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, err := m.held(id, token)
	if err != nil {
		return err
	}
	m.remove(l)
	return nil
}

// Fail implements Store.
func (m *Memory) Fail(_ context.Context, l Letter) error {
	if err := l.ValidateOutcome(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.held(l.ID, l.Token)
	if err != nil {
		return err
	}
	s.Reason, s.Error = Message(l.Reason), Message(l.Error)
	s.Attempts, s.Redrives = l.Attempts, l.Redrives
	s.Due, s.Parked = l.Due, l.Parked
	s.Token, s.LeaseEnd = "", time.Time{}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Letter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.letters[id]
	if !ok {
		return Letter{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return copyOf(l), nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, queue, after string, max int) ([]Letter, error) {
	if max < 1 {
		return nil, fmt.Errorf("%w: list of %d letters: want ≥ 1", ErrInvalidLetter, max)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var page []*Letter
	for id, l := range m.letters {
		if id > after && (queue == "" || l.Queue == queue) {
			page = append(page, l)
		}
	}
	slices.SortFunc(page, func(a, b *Letter) int { return cmp.Compare(a.ID, b.ID) })
	page = page[:min(len(page), max)]
	out := make([]Letter, len(page))
	for i, l := range page {
		out[i] = copyOf(l)
	}
	return out, nil
}

// Requeue implements Store.
func (m *Memory) Requeue(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.letters[id]
	if !ok {
		return fmt.Errorf("%w: requeue %q", ErrNotFound, id)
	}
	l.Due, l.Parked, l.Redrives = at, false, 0
	l.Token, l.LeaseEnd = "", time.Time{}
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.letters[id]
	if !ok {
		return fmt.Errorf("%w: delete %q", ErrNotFound, id)
	}
	m.remove(l)
	return nil
}

// remove deletes l from both maps.
func (m *Memory) remove(l *Letter) {
	delete(m.letters, l.ID)
	q := m.queues[l.Queue]
	delete(q, l.ID)
	if len(q) == 0 {
		delete(m.queues, l.Queue)
	}
}

// Count implements Store.
func (m *Memory) Count(_ context.Context, queue string, now time.Time) (Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c Counts
	for _, l := range m.letters {
		if queue == "" || l.Queue == queue {
			c.add(l, now)
		}
	}
	return c, nil
}

// add counts l in the one class it is in at now.
func (c *Counts) add(l *Letter, now time.Time) {
	switch {
	case l.Parked:
		c.Parked++
	case l.Token != "" && l.LeaseEnd.After(now):
		c.Held++
	case l.Due.After(now):
		c.Waiting++
	default:
		c.Due++
	}
}
