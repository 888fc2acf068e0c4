package deadlettercli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/postgres/pgtest"
)

// execute runs yaoki deadletter args with clock as the machine's clock and
// returns its exit code and output.
func execute(clock func() time.Time, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	cmd := newCommand(clock)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(context.Background())
	var ee *cli.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		errb.WriteString(ee.Msg)
	case err != nil:
		code = 2
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// TestDecidesByTheDatabaseClock: the fault is a clock jump on the
// operator's machine, an hour ahead or behind the database's and the
// fleet's. A letter held by a redriver for 5 more minutes, one waiting 30
// minutes and a parked one: list and count give them their states by the
// database's clock, requeue refuses the held one and makes the parked one
// due 10 minutes from the database's now; redrive, which decides by the
// machine's clock as each redriver does, warns of the skew.
func TestDecidesByTheDatabaseClock(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewDeadLetters(pool)
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			clock := func() time.Time { return time.Now().Add(skew) }
			q := "q" + skew.String()
			now := time.Now()
			for _, l := range []deadletter.Letter{
				{ID: q + "-held", Queue: q, Due: now.Add(-time.Minute)},
				{ID: q + "-waiting", Queue: q, Due: now.Add(30 * time.Minute)},
				{ID: q + "-parked", Queue: q, Due: now.Add(-time.Hour), Parked: true, Redrives: 5},
			} {
				l.Created = now.Add(-2 * time.Hour)
				if err := store.Put(ctx, l); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := store.Claim(ctx, q, now, 10, 5*time.Minute); err != nil || len(got) != 1 {
				t.Fatalf("claim: %v, %v", got, err)
			}
			dsn := "--postgres=" + srv.DSN

			code, out, errs := execute(clock, "list", "--queue", q, "--json", dsn)
			if code != 0 {
				t.Fatalf("list: exit %d: %s", code, errs)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var l struct{ ID, State string }
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatal(err)
				}
				if want := strings.TrimPrefix(l.ID, q+"-"); l.State != want {
					t.Errorf("list: %s is %s, want %s", l.ID, l.State, want)
				}
			}
			code, out, errs = execute(clock, "count", "--queue", q, "--json", dsn)
			var c struct{ Waiting, Due, Held, Parked int }
			if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil {
				t.Fatalf("count: exit %d, %q, %v: %s", code, out, err, errs)
			}
			if c.Waiting != 1 || c.Due != 0 || c.Held != 1 || c.Parked != 1 {
				t.Errorf("count: %+v; want 1 waiting, 1 held, 1 parked", c)
			}
			if code, out, errs = execute(clock, "requeue", q+"-held", dsn); code != 1 || out != "" || !strings.Contains(errs, "held by a redriver") {
				t.Errorf("requeue of the held letter: exit %d, stdout %q, stderr %q; want 1, left as it is", code, out, errs)
			}
			if code, _, errs = execute(clock, "requeue", "--in", "10m", q+"-parked", dsn); code != 0 {
				t.Fatalf("requeue --in 10m: exit %d: %s", code, errs)
			}
			if l, _ := store.Get(ctx, q+"-parked"); l.Due.Sub(now) < 10*time.Minute || l.Due.Sub(time.Now()) > 10*time.Minute {
				t.Errorf("requeue --in 10m made the letter due %v from the database's now, want 10m", l.Due.Sub(now).Round(time.Second))
			}
			code, _, errs = execute(clock, "redrive", "--queue", q+"-none", "--once", dsn)
			ahead := map[bool]string{true: "ahead of", false: "behind"}[skew > 0]
			if code != 0 || !strings.Contains(errs, "warning: this machine's clock is 1h0m0s "+ahead+" the database's") {
				t.Errorf("redrive: exit %d, stderr %q; want a warning of the skew", code, errs)
			}
		})
	}
}
