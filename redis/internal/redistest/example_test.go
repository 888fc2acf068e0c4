package redistest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/yaoki-go/yaoki/internal/leakcheck"
	"github.com/yaoki-go/yaoki/redis/internal/redistest"
)

func TestMain(m *testing.M) {
	if redistest.Binary() == "" {
		// An example cannot skip itself: without a server there is nothing
		// to run.
		fmt.Fprintln(os.Stderr, "redistest: redis-server is not installed; skipping the example")
		os.Exit(0)
	}
	leakcheck.Main(m)
}

// A durable server keeps what it acknowledged through a crash: Kill is
// SIGKILL, Resume starts it again on the same port and directory. (A test
// calls StartDurable(t), which also stops the server and removes its
// directory when the test ends.)
func Example() {
	dir, err := os.MkdirTemp("", "redistest-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := redistest.Open(dir, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Kill()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr})
	c.Incr(ctx, "charges")
	n, err := c.Incr(ctx, "charges").Result()
	fmt.Println("before the crash:", n, err)
	c.Close()

	s.Kill()
	if err := s.Resume(); err != nil {
		fmt.Println(err)
		return
	}
	c = goredis.NewClient(&goredis.Options{Addr: s.Addr})
	defer c.Close()
	n, err = c.Get(ctx, "charges").Int64()
	fmt.Println("after it:", n, err)
	// Output:
	// before the crash: 2 <nil>
	// after it: 2 <nil>
}
