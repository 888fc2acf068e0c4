package postgres_test

import (
	"flag"
	"fmt"
	"os"

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

// exampleServer starts a PostgreSQL server for an example and returns its
// DSN and the function that stops it and removes its files.
func exampleServer() (dsn string, stop func()) {
	srv, err := pgtest.Open()
	if err != nil {
		panic("postgres example: " + err.Error())
	}
	return srv.DSN, srv.Close
}
