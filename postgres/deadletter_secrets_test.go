package postgres_test

import (
	"context"
	"testing"

	"github.com/yaoki-go/yaoki/deadletter/deadlettertest"
	"github.com/yaoki-go/yaoki/postgres"
)

// No row of the table holds a credential of a captured HTTP request: every
// column, the payload read as text.
func TestDeadLettersHoldNoCredentials(t *testing.T) {
	_, pool := start(t)
	deadlettertest.TestHTTPSecrets(t, postgres.NewDeadLetters(pool), func(t *testing.T, queue string) string {
		var rows string
		err := pool.QueryRow(context.Background(),
			`SELECT coalesce(string_agg(t::text || ' ' || coalesce(convert_from(t.payload, 'UTF8'), ''), E'\n'), '')
			FROM yaoki_dead_letters t WHERE queue = $1`, queue).Scan(&rows)
		if err != nil {
			t.Fatal(err)
		}
		if rows == "" {
			t.Fatal("no row holds the queue's letters")
		}
		return rows
	})
}
