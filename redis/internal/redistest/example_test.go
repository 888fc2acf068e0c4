package redistest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

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

// exampleT stands in for the *testing.T of a test, which an example has
// not: it keeps the cleanups, run in reverse by cleanup, makes temporary
// directories and panics on a failure. Other methods of testing.TB are not
// provided (nil).
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (*exampleT) Helper()                           {}
func (*exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-example-")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// A durable server keeps what it acknowledged through a crash: Kill is
// SIGKILL, Resume starts it again on the same port and directory.
func Example() {
	t := &exampleT{}
	defer t.cleanup()
	ctx := context.Background()

	s := redistest.StartDurable(t)
	c := s.Client(t)
	c.Incr(ctx, "charges")
	n, err := c.Incr(ctx, "charges").Result()
	fmt.Println("before the crash:", n, err)

	s.Kill()
	if err := s.Resume(); err != nil {
		fmt.Println(err)
		return
	}
	n, err = s.Client(t).Get(ctx, "charges").Int64()
	fmt.Println("after it:", n, err)
	// Output:
	// before the crash: 2 <nil>
	// after it: 2 <nil>
}
