// Package redis keeps the toolkit's shared state in Redis, so that a fleet
// of processes acts as one: IdempotencyStore holds the records of the
// idempotency middleware, with every transition done atomically by Redis
// itself (Lua scripts on one key, so it works with Redis Cluster too).
//
// The package is a module of its own (github.com/yaoki-go/yaoki/redis), so
// that users of the root module never download a Redis client. It uses
// github.com/redis/go-redis/v9; import that one under another name, such as
// goredis.
package redis
