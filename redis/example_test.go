package redis_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/retry"
)

// A fleet of servers that share their idempotency records through Redis: a
// retry that reaches another instance is replayed there too. (No Output:
// it needs a Redis server.)
func ExampleNewIdempotencyStore() {
	// ContextTimeoutEnabled: the middleware's bounds on each call (a
	// renewal gets half of what is left of its lease) hold.
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	store := redis.NewIdempotencyStore(rdb, redis.IdempotencyConfig{Prefix: "payments:idem:"})
	// A server that evicts keys or restarts without an append-only file
	// loses records: say so at start.
	if err := store.Check(context.Background()); err != nil {
		log.Printf("idempotency store: %v", err)
	}
	idem, err := idempotency.New(idempotency.Config{
		Store: store,
		Scope: func(r *http.Request) string { return r.Header.Get("X-Client-Id") },
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", idem.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	_ = http.ListenAndServe("127.0.0.1:8080", mux)
}

// Every instance of a service shares one retry budget for the API it
// calls, so that the fleet retries 20 % of its successful calls plus one
// retry per second in all, however many instances there are. (No Output:
// it needs a Redis server.)
func ExampleNewBudget() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	fleet, err := redis.NewBudget(redis.BudgetConfig{
		Client:  rdb,
		Name:    "api.example.com",
		OnError: func(err error) { log.Print(err) }, // Redis unreachable: each instance decides alone meanwhile
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go fleet.Run(ctx) // syncs every second

	client := &http.Client{Transport: &httpretry.Transport{Guards: httpretry.Guards{
		Budget: func(host string) retry.Budget {
			if host == "api.example.com" {
				return fleet
			}
			return nil // no budget for other hosts
		},
	}}}
	resp, err := client.Get("https://api.example.com/v1/orders")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
}

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
