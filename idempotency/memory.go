package idempotency

import (
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
	// MaxRecords bounds the number of records held. When a new key arrives
	// at the bound, records whose lease or retention has passed are dropped
	// first (those among the oldest 64 at least, so that the cost stays
	// bounded), else the oldest completed record (by the time it completed);
	// records in progress are never evicted, and when every record is in
	// progress Begin returns ErrStoreFull. Zero: DefaultMaxRecords.
	MaxRecords int
}

// MemoryStore is a Store in the process's memory: the default store of the
// middleware. Records do not survive a restart and are not shared between
// processes, so it suits a single instance, tests and development; a fleet
// needs a shared store (the redis and postgres modules).
//
// It is bounded (see MemoryConfig.MaxRecords), drops records whose time has
// passed as new keys arrive (no background goroutine), and is safe for
// concurrent use. Records it returns share memory with the store: callers
// must not modify their Header or Body, and a Response given to Complete
// belongs to the store afterwards.
type MemoryStore struct {
	max int

	mu         sync.Mutex
	m          map[ID]*memEntry
	head, tail *memEntry // by last transition, oldest first
}

type memEntry struct {
	id         ID
	rec        Record
	prev, next *memEntry
}

// NewMemoryStore returns an empty store. A negative MaxRecords is refused.
func NewMemoryStore(c MemoryConfig) (*MemoryStore, error) {
	if c.MaxRecords < 0 {
		return nil, fmt.Errorf("idempotency: MemoryConfig.MaxRecords %d out of range: want ≥ 1, or 0 for the default (%d)", c.MaxRecords, DefaultMaxRecords)
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	return &MemoryStore{max: c.MaxRecords, m: make(map[ID]*memEntry)}, nil
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
	// map does not keep them until it is full.
	for i := 0; i < 4 && s.head != nil && !now.Before(s.head.rec.Expires); i++ {
		s.remove(s.head)
	}
	e := s.m[id]
	if e != nil {
		if now.Before(e.rec.Expires) {
			// The holder's own Begin sent again claims again.
			return e.rec, e.rec.State == InProgress && e.rec.Token == token, nil
		}
		s.remove(e)
	}
	if len(s.m) >= s.max && !s.evict(now) {
		return Record{}, false, ErrStoreFull
	}
	e = &memEntry{id: id, rec: Record{State: InProgress, Fingerprint: fp, Token: token, Expires: now.Add(lease)}}
	s.m[id] = e
	s.pushBack(e)
	return Record{}, true, nil
}

// evict makes room for one record: it drops the dead records among the
// oldest (at least evictScan of them, more until it finds one to drop), or
// else the oldest completed record. It reports whether there is room.
func (s *MemoryStore) evict(now time.Time) bool {
	var oldest *memEntry
	freed := false
	for e, i := s.head, 0; e != nil; i++ {
		if i >= evictScan && (freed || oldest != nil) {
			break
		}
		next := e.next
		switch {
		case !now.Before(e.rec.Expires):
			s.remove(e)
			freed = true
		case oldest == nil && e.rec.State == Completed:
			oldest = e
		}
		e = next
	}
	switch {
	case freed:
		return true
	case oldest == nil:
		return false
	}
	s.remove(oldest)
	return true
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
// completed by its holder as long as no other request has claimed it.
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
	s.unlink(e)
}

func (s *MemoryStore) unlink(e *memEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (s *MemoryStore) pushBack(e *memEntry) {
	e.prev = s.tail
	if s.tail != nil {
		s.tail.next = e
	} else {
		s.head = e
	}
	s.tail = e
}

func (s *MemoryStore) moveBack(e *memEntry) {
	if s.tail == e {
		return
	}
	s.unlink(e)
	s.pushBack(e)
}
