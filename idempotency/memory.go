package idempotency

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxRecords is the number of records a MemoryStore holds when
// MemoryConfig.MaxRecords is zero. With responses of a few kilobytes that
// is a few hundred megabytes at most; lower it for large responses.
const DefaultMaxRecords = 100_000

// MemoryConfig configures a MemoryStore. The zero value means the defaults.
type MemoryConfig struct {
	// MaxRecords bounds the number of records held, over all scopes. When
	// a new key arrives at the bound, the store makes room, in this order:
	//
	//  1. it drops records whose lease or retention has passed (among the
	//     oldest 64, so that the cost stays bounded), a claim within
	//     CompleteGrace of its lease's end too;
	//  2. it evicts the oldest completed record of another scope that holds
	//     at least two records more than the new key's scope (among the
	//     same oldest 64);
	//  3. it evicts the oldest completed record of the new key's own scope
	//     (by the time it completed);
	//  4. it looks further for a record as in 1 or 2.
	//
	// So one scope's new keys never take a record from a scope that would
	// then hold fewer records than theirs: a tenant that floods the store
	// with new keys evicts its own completed records once it holds its
	// share, never pushing another tenant below it. With global keys
	// (Config.Scope nil) there is one scope, and 3 evicts the oldest
	// completed record. Records in progress are never evicted; when no
	// record may go, Begin returns ErrStoreFull. Zero: DefaultMaxRecords.
	MaxRecords int
}

// MemoryStore is a Store in the process's memory: the default store of the
// middleware. Records do not survive a restart and are not shared between
// processes, so it suits a single instance, tests and development; a fleet
// needs a shared store (the redis and postgres modules).
//
// It is bounded (see MemoryConfig.MaxRecords), drops records whose time has
// passed as new keys arrive (a claim CompleteGrace after its lease, for its
// holder to complete it late; no background goroutine), and is safe for
// concurrent use. Records it returns share memory with the store: callers
// must not modify their Header or Body, and a Response given to Complete
// belongs to the store afterwards.
type MemoryStore struct {
	max int

	mu     sync.Mutex
	m      map[ID]*memEntry
	all    memList              // by last transition, oldest first (inStore links)
	scopes map[string]*memScope // the scopes that hold records
}

// memScope is one scope's records, by last transition, oldest first
// (inScope links).
type memScope struct {
	n    int
	list memList
}

type memEntry struct {
	id    ID
	rec   Record
	scope *memScope
	links [2]memLinks // indexed by inStore and inScope
}

// The two lists an entry is in: the store's and its scope's.
const (
	inStore = iota
	inScope
)

type memLinks struct{ prev, next *memEntry }

// memList is a list of entries threaded through one kind of their links.
type memList struct{ head, tail *memEntry }

// unlink takes e out of l, whose links are e.links[k].
func (l *memList) unlink(e *memEntry, k int) {
	at := &e.links[k]
	if at.prev != nil {
		at.prev.links[k].next = at.next
	} else {
		l.head = at.next
	}
	if at.next != nil {
		at.next.links[k].prev = at.prev
	} else {
		l.tail = at.prev
	}
	*at = memLinks{}
}

// pushBack puts e, in no list of kind k, at the end of l.
func (l *memList) pushBack(e *memEntry, k int) {
	e.links[k] = memLinks{prev: l.tail}
	if l.tail != nil {
		l.tail.links[k].next = e
	} else {
		l.head = e
	}
	l.tail = e
}

// moveBack moves e, in l, to its end.
func (l *memList) moveBack(e *memEntry, k int) {
	if l.tail != e {
		l.unlink(e, k)
		l.pushBack(e, k)
	}
}

// NewMemoryStore returns an empty store. A negative MaxRecords is refused.
func NewMemoryStore(c MemoryConfig) (*MemoryStore, error) {
	if c.MaxRecords < 0 {
		return nil, fmt.Errorf("idempotency: MemoryConfig.MaxRecords %d out of range: want ≥ 1, or 0 for the default (%d)", c.MaxRecords, DefaultMaxRecords)
	}
	c.MaxRecords = cmp.Or(c.MaxRecords, DefaultMaxRecords)
	return &MemoryStore{max: c.MaxRecords, m: make(map[ID]*memEntry), scopes: make(map[string]*memScope)}, nil
}

// Len returns the number of records held, including those whose time has
// passed but that were not dropped yet.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Begin implements Store.
func (s *MemoryStore) Begin(_ context.Context, id ID, fp Fingerprint, token string, now time.Time, lease time.Duration) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Drop a few dead records from the front on every call, so that the
	// map does not keep them until it is full. A claim past its lease
	// stays for CompleteGrace, for its holder to complete it late; the
	// sweep goes past it.
	for e, i := s.all.head, 0; e != nil && i < 4; i++ {
		next := e.links[inStore].next
		switch {
		case !now.Before(e.rec.Expires) && (e.rec.State != InProgress || !now.Before(e.rec.Expires.Add(CompleteGrace))):
			s.remove(e)
		case e.rec.State != InProgress || now.Before(e.rec.Expires):
			next = nil // a live record: the sweep stops there
		}
		e = next
	}
	e := s.m[id]
	if e != nil {
		if now.Before(e.rec.Expires) {
			// The holder's own Begin sent again claims again.
			return e.rec, e.rec.State == InProgress && e.rec.Token == token, nil
		}
		s.remove(e)
	}
	if len(s.m) >= s.max && !s.evict(now, id.Scope) {
		return Record{}, false, ErrStoreFull
	}
	sc := s.scopes[id.Scope]
	if sc == nil {
		sc = &memScope{}
		s.scopes[id.Scope] = sc
	}
	e = &memEntry{id: id, rec: Record{State: InProgress, Fingerprint: fp, Token: token, Expires: now.Add(lease)}, scope: sc}
	s.m[id] = e
	s.pushBack(e)
	return Record{}, true, nil
}

// evict makes room for one record of scope, in the order MaxRecords
// documents. It reports whether there is room.
func (s *MemoryStore) evict(now time.Time, scope string) bool {
	own := s.scopes[scope]
	ownN := 0
	if own != nil {
		ownN = own.n
	}
	// may says whether a live record may go to make room for scope's.
	may := func(e *memEntry) bool {
		return e.rec.State == Completed && e.scope != own && e.scope.n >= ownN+2
	}
	var other *memEntry
	freed := false
	for e, i := s.all.head, 0; e != nil && i < evictScan; i++ {
		next := e.links[inStore].next
		switch {
		case !now.Before(e.rec.Expires):
			s.remove(e)
			freed = true
		case other == nil && may(e):
			other = e
		}
		e = next
	}
	switch {
	case freed:
		return true
	case other != nil:
		s.remove(other)
		return true
	}
	if own != nil {
		for e := own.list.head; e != nil; e = e.links[inScope].next {
			if e.rec.State == Completed || !now.Before(e.rec.Expires) {
				s.remove(e)
				return true
			}
		}
	}
	for e := s.all.head; e != nil; e = e.links[inStore].next {
		if !now.Before(e.rec.Expires) || may(e) {
			s.remove(e)
			return true
		}
	}
	return false
}

// evictScan is how many of the oldest records evict looks at, at least.
const evictScan = 64

// held returns id's entry if token holds it in progress.
func (s *MemoryStore) held(id ID, token string) *memEntry {
	e := s.m[id]
	if e == nil || e.rec.State != InProgress || e.rec.Token != token {
		return nil
	}
	return e
}

// Extend implements Store.
func (s *MemoryStore) Extend(_ context.Context, id ID, token string, now time.Time, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(id, token)
	if e == nil {
		return ErrLeaseLost
	}
	e.rec.Expires = now.Add(lease)
	s.moveBack(e)
	return nil
}

// Complete implements Store. A record whose lease has passed can still be
// completed by its holder as long as no other request has claimed it: the
// store keeps it CompleteGrace past its lease, unless it must make room at
// its bound (see MemoryConfig.MaxRecords).
func (s *MemoryStore) Complete(_ context.Context, id ID, token string, resp Response, now time.Time, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.held(id, token)
	if e == nil {
		if e := s.m[id]; e != nil && e.rec.State == Completed && e.rec.Token == token {
			return nil // completed by this token already
		}
		return ErrLeaseLost
	}
	e.rec = Record{State: Completed, Fingerprint: e.rec.Fingerprint, Token: token, Expires: now.Add(ttl), Response: resp}
	s.moveBack(e)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(_ context.Context, id ID, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.held(id, token); e != nil {
		s.remove(e)
	}
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, id ID, now time.Time) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[id]
	if e == nil || !now.Before(e.rec.Expires) {
		return Record{}, false, nil
	}
	return e.rec, true, nil
}

func (s *MemoryStore) remove(e *memEntry) {
	delete(s.m, e.id)
	s.all.unlink(e, inStore)
	sc := e.scope
	sc.list.unlink(e, inScope)
	if sc.n--; sc.n == 0 {
		delete(s.scopes, e.id.Scope)
	}
}

// pushBack puts a new e at the end of both lists.
func (s *MemoryStore) pushBack(e *memEntry) {
	s.all.pushBack(e, inStore)
	e.scope.n++
	e.scope.list.pushBack(e, inScope)
}

// moveBack moves e to the end of both lists: its last transition is now.
func (s *MemoryStore) moveBack(e *memEntry) {
	s.all.moveBack(e, inStore)
	e.scope.list.moveBack(e, inScope)
}
