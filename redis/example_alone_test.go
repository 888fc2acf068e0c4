package redis_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/redis"
)

// Until its first sync, or while Redis cannot be reached, a Budget decides
// on this process's counts, as a budget.Share would, with the whole fleet's
// floor: here 20 % of 100 successes plus 1 retry/s over the 10 s window,
// 30 retries. Nothing listens on port 1, so the sync fails (Run would pass
// its error to OnError and try again a second later).
func ExampleBudget_unreachable() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	fleet, err := redis.NewBudget(redis.BudgetConfig{Client: rdb, Name: "api.example.com"})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	err = fleet.SyncAt(context.Background(), now)
	fmt.Println("sync failed:", err != nil && strings.HasPrefix(err.Error(), "redis: budget api.example.com sync: "))

	for range 100 {
		fleet.RecordAt(now, true, true) // first attempts that succeeded
	}
	granted := 0
	for range 100 {
		if fleet.AllowRetryAt(now, false) {
			granted++
		}
	}
	fmt.Println("retries granted:", granted, "shared:", fleet.StateAt(now).Shared)
	// Output:
	// sync failed: true
	// retries granted: 30 shared: false
}
