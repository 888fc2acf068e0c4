// Package deadletter keeps work that ran out of retries, so that it is not
// silently lost, and redrives it later, when the dependency may be back.
//
// A caller whose retry loop gave up puts the work in a Store as a Letter:
// its queue (the kind of work, served by one Redriver), its idempotency key,
// its payload, and why it was given up (Capture fills these from a
// *retry.Error). A Redriver claims the letters of its queue that are due,
// hands each to the queue's handler once (with a context that tells inner
// retry loops not to retry: one retrying layer), deletes the letters whose
// redrive succeeded, and puts the others back with a later due time from an
// exponential schedule measured in minutes. A letter whose redrive failed
// MaxRedrives times, or with a permanent error, is parked: it stays in the
// store, for an operator to inspect (List, Get) and to requeue or delete.
//
// Claims are leases: a claimed letter is held by a token until its lease
// ends, so that several redrivers (one per process of a fleet, over a
// shared store such as the PostgreSQL one of the postgres module) never
// hand the same letter to two handlers at once, and a redriver that died
// holding a letter loses it when the lease ends: the next claim counts that
// claim as a failed redrive, so that a letter that kills its redriver is
// parked after MaxRedrives of them. A handler's deadline is
// its claim's lease end, and a letter whose lease ended before its turn is
// not started; a handler that ignores its context may still run alongside
// another, and the letter's Key is there so that the receiver executes the
// work once.
//
// Decisions take now: Store methods and Redriver.RedriveAt decide by the
// time they are given; only Redriver.Run reads the clock and waits.
package deadletter
