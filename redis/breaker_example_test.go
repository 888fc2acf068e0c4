package redis_test

import (
	"context"
	"errors"
	"log"
	"net/http"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/retry"
)

// Every process of a fleet wraps its own breaker for the payments service
// in a redis.Breaker: when one process's breaker trips, the others refuse
// too within about two seconds, instead of each sending its own 20 failing
// calls; each process syncs on a goroutine of its own. (No Output: it needs
// a Redis server.)
func ExampleNewBreaker() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	local, err := breaker.New(breaker.Config{Name: "payments"})
	if err != nil {
		log.Fatal(err)
	}
	b, err := redis.NewBreaker(redis.BreakerConfig{
		Client:  rdb,
		Local:   local,
		OnError: func(err error) { log.Print(err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx) // one round trip per second

	err = retry.Do(ctx, retry.Policy{Env: &retry.Env{Breaker: b}}, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:8080/health", nil)
		if err != nil {
			return retry.Permanent(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if errors.Is(err, redis.ErrFleetOpen) {
		log.Print("another process found payments down: not calling it")
	}
}
