package redis_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/redis"
	"github.com/yaoki-go/yaoki/retry"
)

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
