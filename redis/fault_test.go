package redis_test

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/internal/idemproc"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

// The fault-injection suite of the Redis idempotency store (go test -run
// Fault): each test injects one fault against a real redis-server and
// checks the handler's runs and every client's answers; the scenarios are
// in internal/idemproc.

func redisFaults(t *testing.T) (idemproc.Faults, *redistest.Server) {
	srv := redistest.Start(t)
	return idemproc.Faults{
		Target:    srv.Addr,
		ChildAddr: srv.Addr,
		Open: func(t *testing.T, addr string) idempotency.Store {
			c := goredis.NewClient(&goredis.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			return redis.NewIdempotencyStore(c, redis.IdempotencyOptions{})
		},
	}, srv
}

// TestFaultRedisLinkCutAtComplete: the link to Redis is cut for 1.5 s as
// the handler returns (lease 3 s): Complete gets through when it is back.
func TestFaultRedisLinkCutAtComplete(t *testing.T) {
	f, srv := redisFaults(t)
	px := srv.Proxy(t)
	idemproc.OutageAtComplete(t, f.Open(t, px.Addr), px.Down, px.Up, 1500*time.Millisecond)
}

// TestFaultRedisLostBeginReply: go-redis runs Begin's script again after
// its reply was lost; the script recognises its own claim.
func TestFaultRedisLostBeginReply(t *testing.T) {
	f, _ := redisFaults(t)
	idemproc.LostBeginReply(t, f)
}

func TestFaultRedisLostCompleteReply(t *testing.T) {
	f, _ := redisFaults(t)
	idemproc.LostCompleteReply(t, f)
}

func TestFaultRedisHolderCutOff(t *testing.T) {
	f, _ := redisFaults(t)
	idemproc.HolderCutOff(t, f)
}

func TestFaultRedisKill(t *testing.T) {
	f, _ := redisFaults(t)
	for _, step := range []string{idemproc.StepClaimed, idemproc.StepHandled, idemproc.StepCompleted} {
		t.Run(step, func(t *testing.T) { idemproc.KillAt(t, f, step) })
	}
}
