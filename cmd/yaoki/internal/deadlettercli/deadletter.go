package deadlettercli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/postgres"
)

// dlFailed is the exit code of a deadletter command that the store failed
// (the database unreachable, the table missing), that was given an ID no
// letter has, or whose requeue left a held letter as it was.
const dlFailed = 1

// dsnEnv is the environment variable that gives --postgres its default.
const dsnEnv = "YAOKI_POSTGRES"

const deadLetterHelp = `
Connection: --postgres DSN, or the environment variable YAOKI_POSTGRES: a
PostgreSQL URL (postgres://user:password@host:5432/db?sslmode=disable) or a
keyword/value string (host=127.0.0.1 dbname=app); the PG* environment
variables and ~/.pgpass fill in what it leaves out, as for psql. The tables
live in the first schema of the connection's search_path.

States: at the time the command runs, on the database's clock (this
machine's may be off the fleet's), each letter is in exactly one of
  waiting  not due yet: its next redrive comes at DUE
  due      due and not held: a redriver may claim it now
  held     claimed by a redriver whose lease has not ended
  parked   out of redrives, or failed permanently: it waits for an operator
           to requeue or delete it

Exit codes:
  0  done
  1  a store or network error (the database unreachable, the table missing),
     an ID that no letter has, or a letter that requeue left to the redriver
     that holds it (the other IDs are still processed)
  2  bad usage
  128+N  stopped by signal N (130 SIGINT, 143 SIGTERM): the statement in
     flight is cancelled by the server, so a letter is changed whole or not
     at all; requeue and delete stop before the next ID and say how many
     were done and which were not, list prints the letters read and the
     --after of the rest; redrive without --once stops between passes and
     exits 0. A second Ctrl-C kills the command at once.`

// NewCommand returns the yaoki deadletter command and its subcommands, built anew at each call.
func NewCommand() *cobra.Command { return newCommand(time.Now) }

// newCommand is NewCommand with clock as this machine's clock (a test's
// skewed one).
func newCommand(clock func() time.Time) *cobra.Command {
	f := &dlFlags{clock: clock}
	cmd := &cobra.Command{
		Use:   "deadletter",
		Short: "Inspect, requeue, delete and redrive dead letters kept in PostgreSQL",
		Long: `deadletter is the operator's view of the dead letters that yaoki programs keep
in PostgreSQL (package deadletter, store postgres.DeadLetters, table
yaoki_dead_letters): work that ran out of retries, kept so that it is not
lost, and redriven later by a deadletter.Redriver.

  migrate  create or update the tables
  list     the letters, a page at a time, with their state
  show     one letter, every field and its payload
  count    letters per state
  requeue  make letters due again (parked ones too), with a fresh redrive count
  delete   remove letters
  redrive  redrive a queue of HTTP letters (package deadletter/httpletter)
` + deadLetterHelp,
		Example: `  export YAOKI_POSTGRES='postgres://app@127.0.0.1:5432/app?sslmode=disable'
  yaoki deadletter migrate
  yaoki deadletter count --queue payments
  yaoki deadletter list --queue payments --state parked
  yaoki deadletter show 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a
  yaoki deadletter requeue 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a
  yaoki deadletter redrive --queue payments --once`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				names := make([]string, 0, len(cmd.Commands()))
				for _, c := range cmd.Commands() {
					names = append(names, c.Name())
				}
				return cli.Usagef("deadletter has no subcommand %q: want one of %s", args[0], strings.Join(names, ", "))
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&f.dsn, "postgres", "", "the database: a PostgreSQL URL or keyword/value string (default: $"+dsnEnv+")")
	for _, sub := range []func(*dlFlags) *cobra.Command{
		newDLMigrateCmd, newDLListCmd, newDLShowCmd, newDLCountCmd,
		newDLRequeueCmd, newDLDeleteCmd, newDLRedriveCmd,
	} {
		cmd.AddCommand(sub(f))
	}
	return cmd
}

// dlFlags are the flags every deadletter subcommand shares.
type dlFlags struct {
	dsn   string
	clock func() time.Time // this machine's: redrive's; the others decide by the database's
}

// dlConn is an open connection pool and the store over it.
type dlConn struct {
	pool  *pgxpool.Pool
	store *postgres.DeadLetters
}

// open connects to the database of --postgres or $YAOKI_POSTGRES. The pool
// connects on first use: a database that cannot be reached shows in the
// first store call's error.
func (f *dlFlags) open(ctx context.Context) (*dlConn, error) {
	dsn := f.dsn
	if dsn == "" {
		dsn = os.Getenv(dsnEnv)
	}
	if strings.TrimSpace(dsn) == "" {
		return nil, cli.Usagef("deadletter: no database: give --postgres DSN or set %s, e.g. --postgres 'postgres://app@127.0.0.1:5432/app?sslmode=disable'", dsnEnv)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message shows the DSN with its password masked.
		return nil, cli.Usagef("deadletter: --postgres: %v\nwant a PostgreSQL URL (postgres://user:password@host:5432/db) or keyword/value string (host=127.0.0.1 dbname=app)", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	cfg.MaxConns = 2 // one command's statements run one after the other
	// A statement whose context ends (SIGINT, SIGTERM) is cancelled by the
	// server (a cancel request), not cut by closing the connection: it is
	// then either done or not, and the command can say which. The
	// connection is closed only if the server does not answer in time.
	cfg.ConnConfig.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: cancelWait}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, cli.Exit(dlFailed, fmt.Sprintf("deadletter: %v", err))
	}
	return &dlConn{pool: pool, store: postgres.NewDeadLetters(pool)}, nil
}

func (c *dlConn) close() { c.pool.Close() }

// failed turns a store error of the command what into exit code 1 with a
// message that says what to do where it can: run migrate for a missing
// table, check the DSN for a database that cannot be reached.
func failed(what string, err error) error {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table
		return cli.Exit(dlFailed, fmt.Sprintf("deadletter %s: the database has no table %s: run 'yaoki deadletter migrate' to create it (%v)", what, postgres.DeadLettersTable, pe.Message))
	case errors.As(err, &ce):
		return cli.Exit(dlFailed, fmt.Sprintf("deadletter %s: cannot connect to PostgreSQL (check --postgres or $%s): %v", what, dsnEnv, ce))
	}
	return cli.Exit(dlFailed, fmt.Sprintf("deadletter %s: %v", what, err))
}

// cancelWait is how long a statement cut short by a signal waits for the
// server to cancel it before its connection is closed (its outcome then
// unknown).
const cancelWait = 2 * time.Second

// withStore opens the connection and runs fn with it and a context that
// SIGINT and SIGTERM end, then closes it. A command that a signal stopped
// exits 128+N (cli.Signalled): fn's error says what was done when it
// already carries that code, else the command what is said to be
// interrupted.
func (f *dlFlags) withStore(cmd *cobra.Command, what string, fn func(ctx context.Context, c *dlConn) error) error {
	ctx, stop := cli.SignalContext(cmd.Context())
	defer stop()
	c, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	err = fn(ctx, c)
	if s, ok := cli.Interrupted(ctx); ok && err != nil {
		if ee := (*cli.ExitError)(nil); errors.As(err, &ee) && ee.Code == s.ExitCode() {
			return err
		}
		return cli.Exit(s.ExitCode(), fmt.Sprintf("deadletter %s: %v", what, s))
	}
	return err
}

func newDLMigrateCmd(f *dlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or update yaoki's tables (idempotently)",
		Long: `migrate applies the postgres module's migrations that the database lacks
(postgres.MigrateApplied: the idempotency table, then the dead-letter table),
in one transaction, and says which it applied. Running it again applies
nothing; several processes may run it at once (an advisory lock serialises
them): one applies the migrations, the others say they had nothing to apply.
` + deadLetterHelp,
		Example: `  yaoki deadletter migrate --postgres 'postgres://app@127.0.0.1:5432/app?sslmode=disable'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withStore(cmd, "migrate", func(ctx context.Context, c *dlConn) error {
				applied, err := postgres.MigrateApplied(ctx, c.pool)
				if s, ok := cli.Interrupted(ctx); ok && err != nil {
					return migrateInterrupted(ctx, c, s)
				}
				if err != nil {
					return failed("migrate", err)
				}
				after, err := appliedMigrations(ctx, c.pool)
				if err != nil {
					return failed("migrate", err)
				}
				var db, schema string
				if err := c.pool.QueryRow(ctx, `SELECT current_database(), coalesce(current_schema(), '')`).Scan(&db, &schema); err != nil {
					return failed("migrate", err)
				}
				out := cmd.OutOrStdout()
				for _, m := range applied {
					fmt.Fprintf(out, "applied %s\n", m)
				}
				if len(applied) == 0 {
					fmt.Fprint(out, "nothing to apply: ")
				}
				fmt.Fprintf(out, "database %s, schema %s: up to date (%s)\n", db, schema, strings.Join(after, ", "))
				return nil
			})
		},
	}
}

// migrateInterrupted is migrate's error for a signal that cut its
// transaction: the migrations apply in one, so the database has all of this
// run's or none; it says which the database records (read without the
// signal's context, for at most cancelWait).
func migrateInterrupted(ctx context.Context, c *dlConn, s *cli.Signalled) error {
	msg := fmt.Sprintf("deadletter migrate: %v", s)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	names, err := appliedMigrations(rctx, c.pool)
	switch {
	case err != nil:
		msg += fmt.Sprintf("; which migrations the database records is unknown (%v): run migrate again", err)
	case len(names) == 0:
		msg += "; the database records no migration: nothing was applied (its transaction rolled back)"
	default:
		msg += fmt.Sprintf("; the database records %s (the migrations apply in one transaction: all of this run's or none)", strings.Join(names, ", "))
	}
	return cli.Exit(s.ExitCode(), msg)
}

// appliedMigrations returns the names recorded in postgres.MigrationsTable,
// none when it does not exist yet.
func appliedMigrations(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	names, err := queryNames(ctx, pool)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return nil, nil
	}
	return names, err
}

func queryNames(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT name FROM `+postgres.MigrationsTable+` ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// dlCount is count's output, and its JSON form.
type dlCount struct {
	Queue   string    `json:"queue"` // "" for every queue
	At      time.Time `json:"at"`
	Waiting int       `json:"waiting"`
	Due     int       `json:"due"`
	Held    int       `json:"held"`
	Parked  int       `json:"parked"`
	Total   int       `json:"total"`
}

func newDLCountCmd(f *dlFlags) *cobra.Command {
	var (
		queue  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "count [--queue Q] [--json]",
		Short: "Count the letters in each state",
		Long: `count prints how many letters are waiting, due, held and parked, and their
total, in one queue (--queue) or in all, as the store counts them at the time
the command runs (deadletter.Store.Count). --json prints one JSON object.
` + deadLetterHelp,
		Example: `  yaoki deadletter count
  yaoki deadletter count --queue payments --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withStore(cmd, "count", func(ctx context.Context, c *dlConn) error {
				now, err := c.now(ctx)
				if err != nil {
					return failed("count", err)
				}
				n, err := c.store.Count(ctx, queue, now)
				if err != nil {
					return failed("count", err)
				}
				out := dlCount{Queue: queue, At: now, Waiting: n.Waiting, Due: n.Due, Held: n.Held, Parked: n.Parked, Total: n.Total()}
				return out.print(cmd.OutOrStdout(), asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "count only this queue (default: every queue)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func (n dlCount) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(n)
	}
	for _, r := range []struct {
		name string
		n    int
	}{{"waiting", n.Waiting}, {"due", n.Due}, {"held", n.Held}, {"parked", n.Parked}, {"total", n.Total}} {
		fmt.Fprintf(w, "%-8s %d\n", r.name, r.n)
	}
	return nil
}
