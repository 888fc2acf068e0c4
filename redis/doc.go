// Package redis keeps the toolkit's shared state in Redis, so that a fleet
// of processes acts as one: IdempotencyStore holds the records of the
// idempotency middleware, with every transition done atomically by Redis
// itself (Lua scripts on one key, so it works with Redis Cluster too). It
// needs a server that keeps its keys (maxmemory-policy noeviction, appendonly
// yes): IdempotencyStore.Check says at start when the server does not.
//
// Breaker shares a circuit breaker's open state across the fleet: each
// process keeps its own breaker.Breaker, deciding from its own calls, and
// wraps it in a Breaker; when one process's breaker trips, SyncAt (run every
// second by Run, one round trip) publishes the end of its open period, and
// every process that syncs refuses calls until then, with an error matching
// breaker.ErrOpen, without having seen a failure itself. Calls never wait
// for Redis: when it cannot be reached, each process goes on alone.
//
// Budget is a retry budget (a retry.Budget) shared by every process that
// uses the same Redis and name: budget.Share's rule (retries ≤ 20 % of the
// successful requests over 10 s, plus a floor) counted over the whole
// fleet, so that many light clients get one floor between them rather than
// one each: 1 retry/s for the fleet by default
// (budget.DefaultFleetMinPerSecond). Its hot path does no I/O; Run syncs it once a second in one
// round trip, each process reserving its share of what is left, and a
// process that cannot reach Redis decides alone meanwhile.
//
// The package is a module of its own (github.com/yaoki-go/yaoki/redis), so
// that users of the root module never download a Redis client. It uses
// github.com/redis/go-redis/v9; import that one under another name, such as
// goredis.
package redis
