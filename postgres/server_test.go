package postgres_test

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// examplesNeedingServer are the examples that run against a real server.
const examplesNeedingServer = "^(ExampleDeadLetters|ExampleAtomic)$"

// skipExamplesWithoutServer skips the examples that need a PostgreSQL
// server when none is installed, as pgtest.Start skips tests: an example
// cannot skip itself, so its name is added to -test.skip.
func skipExamplesWithoutServer() {
	if pgtest.BinDir() != "" {
		return
	}
	flag.Parse()
	skip := examplesNeedingServer
	if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
		skip = prev + "|" + skip
	}
	if err := flag.Set("test.skip", skip); err != nil {
		fmt.Fprintln(os.Stderr, "postgres: cannot skip the examples that need a server:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, pgtest.NotInstalled+" (examples "+examplesNeedingServer+")")
}

// exampleDB starts a PostgreSQL server for an example, migrated (as
// ExampleNewIdempotencyStore shows), and returns a pool to it and the
// function that closes the pool, stops the server and removes its files.
func exampleDB(ctx context.Context) (pool *pgxpool.Pool, stop func()) {
	srv, err := pgtest.Open()
	if err != nil {
		panic("postgres example: " + err.Error())
	}
	pool, err = pgxpool.New(ctx, srv.DSN)
	if err == nil {
		err = postgres.Migrate(ctx, pool)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		srv.Close()
		panic("postgres example: " + err.Error())
	}
	return pool, func() {
		pool.Close()
		srv.Close()
	}
}
