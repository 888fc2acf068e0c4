package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

func TestMain(m *testing.M) {
	if pgtest.BinDir() == "" {
		// An example cannot skip itself: without a server there is nothing
		// to run.
		fmt.Fprintln(os.Stderr, pgtest.NotInstalled)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A test's server: Start (in a test) or Open (here, in an example) makes a
// new cluster; DSN connects to it.
func Example() {
	srv, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT 6 * 7").Scan(&n); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n)
	// Output: 42
}

func TestStartSkipsOrServes(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var port int
	if err := conn.QueryRow(ctx, "SELECT current_setting('port')::int").Scan(&port); err != nil {
		t.Fatal(err)
	}
	if port != srv.Port || srv.Addr != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("server on port %d, Port says %d, Addr %q", port, srv.Port, srv.Addr)
	}
}
