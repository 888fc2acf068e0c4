package deadlettercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/deadletter/httpletter"
	"github.com/yaoki-go/yaoki/postgres"
	"github.com/yaoki-go/yaoki/retry"
)

// parseWhen returns the due time that requeue's --at or --in asks for:
// --at an RFC 3339 time with its zone, --in a duration from now (a Go
// duration or plain seconds, ≥ 0), neither: now. Both is refused.
func parseWhen(at, in string, now time.Time) (time.Time, error) {
	switch {
	case at != "" && in != "":
		return time.Time{}, errors.New("--at and --in cannot be combined: give the time (--at) or the wait from now (--in)")
	case at != "":
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(at))
		if err != nil {
			return time.Time{}, fmt.Errorf("--at %q: want an RFC 3339 time with its zone, e.g. 2025-06-01T12:00:00Z or 2025-06-01T14:00:00+02:00", at)
		}
		return t.UTC(), nil
	case in != "":
		d, err := flags.ParseSeconds(in)
		if err != nil {
			return time.Time{}, fmt.Errorf("--in: %v", err)
		}
		return now.Add(d), nil
	}
	return now, nil
}

func newDLRequeueCmd(f *dlFlags) *cobra.Command {
	var (
		at, in string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "requeue ID... [--at RFC3339 | --in DURATION] [--force]",
		Short: "Make letters due again (parked ones too), with a fresh redrive count",
		Long: `requeue makes each letter ID due at --at (an RFC 3339 time), or --in a
duration from now, or now: unparked, its count of failed redrives reset to 0
(an operator's fresh start: it gets every redrive again). It prints each ID
requeued.

A letter held by a redriver (state held: a claim whose lease has not ended)
is left as it is: its redriver may be sending it right now, and requeued,
another redriver could claim it and send it a second time (the work done
twice wherever its key is not honoured). requeue says who holds it until
when; once the lease ends, its redriver has stored the outcome (deleted,
redriven later, or parked) or was killed, and requeue works. --force
requeues a held letter anyway, ending its claim (its redriver can no longer
store its outcome): for a redriver known to be gone. The check and the change
are one statement: a claim taken meanwhile is never ended without --force.

An ID that no letter has, or a held letter, is reported on stderr and makes
the exit code 1, once the other IDs are requeued.

Now, for --in and for the held check, is the database's clock.
Durations are Go durations (90s, 5m, 1h30m) or plain seconds.
` + deadLetterHelp,
		Example: `  # redrive a parked letter at the next pass
  yaoki deadletter requeue 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a

  # every parked letter of a queue, in an hour (the partner's maintenance window)
  yaoki deadletter list --queue payments --state parked --limit 1000 --json | jq -r .id |
      xargs yaoki deadletter requeue --in 1h`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("requeue needs the IDs of the letters: yaoki deadletter requeue ID... (yaoki deadletter list shows them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			if _, err := parseWhen(at, in, f.clock()); err != nil {
				return cli.Usagef("%v", err)
			}
			return f.withStore(cmd, "requeue", func(ctx context.Context, c *dlConn) error {
				now, err := c.now(ctx)
				if err != nil {
					return failed("requeue", err)
				}
				due, _ := parseWhen(at, in, now) // checked above
				return eachID(ctx, cmd, "requeue", ids, now, func(id string) (string, error) {
					msg := "requeued " + oneLine(id) + ", due " + due.Format(time.RFC3339Nano)
					if force {
						return msg, c.store.Requeue(ctx, id, due)
					}
					return msg, c.store.RequeueUnheld(ctx, id, due, now)
				})
			})
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "due at this RFC 3339 time, e.g. 2025-06-01T12:00:00Z (default: now)")
	cmd.Flags().StringVar(&in, "in", "", "due after this duration from now, e.g. 30m (default: now)")
	cmd.Flags().BoolVar(&force, "force", false, "requeue held letters too, ending their redriver's claim (it may be sending them now)")
	return cmd
}

func newDLDeleteCmd(f *dlFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID...",
		Short: "Remove letters for good",
		Long: `delete removes each letter ID, claimed or not, without asking: the work it held
is dropped. It prints each ID deleted. An ID that no letter has is reported on
stderr and makes the exit code 1, once the other IDs are deleted.

A held letter (a redriver's claim whose lease has not ended) is deleted too:
nothing is sent twice (no redriver can claim a deleted letter, and its holder's
outcome finds it gone), but the request its redriver may be sending now can
still be done. To drop work for sure, list --state held first.
` + deadLetterHelp,
		Example: `  yaoki deadletter delete 0f9c2e1a7b3d4c5e8f6a7b8c9d0e1f2a 5d41402abc4b2a76b9719d911017c592`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("delete needs the IDs of the letters: yaoki deadletter delete ID... (yaoki deadletter list shows them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			return f.withStore(cmd, "delete", func(ctx context.Context, c *dlConn) error {
				return eachID(ctx, cmd, "delete", ids, time.Time{}, func(id string) (string, error) {
					return "deleted " + oneLine(id), c.store.Delete(ctx, id)
				})
			})
		},
	}
}

// eachID applies fn to each ID, printing its message on success. An ID not
// found is reported on stderr and the others are still processed; the exit
// code is then 1; so is a letter held by a claim (a *postgres.HeldError),
// whose lease end is told relative to now. Any other error stops at once
// (the store is failing), naming the IDs left undone.
//
// A signal (ctx ended by cli.SignalContext) stops it between two IDs: the
// statement in flight is cancelled by the server, so that its letter is
// either changed whole or not at all, and the error (exit 128+N) says how
// many IDs were done, whether the one in flight was (unknown only when the
// server did not answer the cancel), and the first of those not done.
func eachID(ctx context.Context, cmd *cobra.Command, what string, ids []string, now time.Time, fn func(id string) (string, error)) error {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	missing, held, done := 0, 0, 0
	var he *postgres.HeldError
	for i, id := range ids {
		if s, ok := cli.Interrupted(ctx); ok {
			return interrupted(s, what, ids, i, done, "")
		}
		msg, err := fn(id)
		switch {
		case err == nil:
			fmt.Fprintln(out, msg)
			done++
		case errors.Is(err, deadletter.ErrNotFound):
			fmt.Fprintf(stderr, "yaoki deadletter %s: no letter has the ID %s\n", what, shellQuote(id))
			missing++
		case errors.As(err, &he):
			fmt.Fprintf(stderr, "yaoki deadletter %s: letter %s is held by a redriver (claim %s) until %s (%s): it may be sending it now; "+
				"left as it is: try again once the lease has ended, or give --force if that redriver is gone\n",
				what, shellQuote(id), oneLine(he.Token), he.LeaseEnd.Format(time.RFC3339Nano), relative(he.LeaseEnd, now))
			held++
		default:
			if s, ok := cli.Interrupted(ctx); ok {
				if notSent(err) { // cancelled by the server: not done
					return interrupted(s, what, ids, i, done, "")
				}
				return interrupted(s, what, ids, i+1, done, fmt.Sprintf("; whether %s was %sd is unknown (the server did not answer the cancel: yaoki deadletter show %s tells)",
					shellQuote(id), what, shellQuote(id)))
			}
			left := fmt.Sprintf(" (not done: %d IDs from %s)", len(ids)-i, shellQuote(id))
			return failed(what, fmt.Errorf("%w%s", err, left))
		}
	}
	var left []string
	if missing > 0 {
		left = append(left, fmt.Sprintf("%d of %d IDs not found", missing, len(ids)))
	}
	if held > 0 {
		left = append(left, fmt.Sprintf("%d of %d letters held by a redriver, left as they are (--force %ss them)", held, len(ids), what))
	}
	if len(left) > 0 {
		return cli.Exit(dlFailed, fmt.Sprintf("deadletter %s: %s", what, strings.Join(left, "; ")))
	}
	return nil
}

// interrupted is eachID's error for a signal: done IDs were done, those
// from ids[next] on were not, and unknown says what else is not known.
func interrupted(s *cli.Signalled, what string, ids []string, next, done int, unknown string) error {
	msg := fmt.Sprintf("deadletter %s: %v after %d of %d IDs %sd%s", what, s, done, len(ids), what, unknown)
	if next < len(ids) {
		msg += fmt.Sprintf("; not %sd: %d ID%s from %s", what, len(ids)-next, cli.Plural(len(ids)-next), shellQuote(ids[next]))
	}
	return cli.Exit(s.ExitCode(), msg)
}

// notSent reports whether err, from a statement whose context a signal
// ended, says that the statement changed nothing: the server cancelled it
// (query_canceled, its transaction rolled back), or it was never sent.
func notSent(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014" || pgconn.SafeToRetry(err)
}

type redriveOptions struct {
	queue           string
	once, verbose   bool
	batch, redrives int
	lease, interval flags.Seconds
	obs             telemetry.Flags // --metrics-addr, --log-format
}

func newDLRedriveCmd(f *dlFlags) *cobra.Command {
	o := &redriveOptions{batch: deadletter.DefaultBatch, redrives: deadletter.DefaultMaxRedrives,
		lease: flags.Seconds{D: deadletter.DefaultLease}, interval: flags.Seconds{D: deadletter.DefaultInterval}}
	cmd := &cobra.Command{
		Use:   "redrive --queue Q [--once] [--batch N] [--lease D] [--max-redrives N] [--interval D] [-v]",
		Short: "Redrive a queue of HTTP letters (package deadletter/httpletter)",
		Long: `redrive runs a deadletter.Redriver over the queue --queue, whose letters must be
HTTP requests that package deadletter/httpletter encoded: each due letter is
claimed for --lease, its request sent once (with the letter's key as
Idempotency-Key, and no credentials: httpletter keeps none, and this command
adds none), and, by the answer:
  2xx, 303, 304               done: the letter is deleted
  another 3xx                 permanent: the letter is parked (redirects are
                              not followed: the request was not executed
                              where it was sent; its error says where the
                              redirect points)
  408, 409, 429, 500, 502,    failed: redriven after a backoff of minutes
  503, 504, no answer         (2.5-5 min, then 5-10, 10-20...; not before the
                              server's Retry-After), parked after
                              --max-redrives failed redrives
  any other status (400, 404, permanent: the letter is parked at once
  422, 501...)
A letter whose payload is not an HTTP letter is permanent too: the handler
cannot send it, so it is parked at once (show prints why in its error). Serve
other queues with a redriver in the program that owns their work.

--once makes one pass (up to --batch letters) and prints its report:
letters claimed, done, failed, parked, lease lost (the claim ended before the
outcome was stored: an operator requeued or deleted the letter meanwhile) and,
when there are any, expired (claimed but not sent: the lease ended while the
letters before them were sent). Without --once it makes a pass every
--interval (at once again after a full batch) until SIGINT or SIGTERM,
printing each pass's report on stderr. Several redrivers, in this command or
in programs, may serve one queue: claims keep them from sending a letter
twice at once. -v prints each letter's outcome on stderr.

The redriver decides by this machine's clock which letters are due and when
its claims end, as every redriver of a fleet does by its own: redrive warns
on stderr when it is more than a second off the database's.

The letters of a pass share one claim: each request's deadline is the end of
its --lease, and a letter whose turn comes after it is not sent (another
redriver may hold it by then); choose --lease to cover --batch requests.
A claim that ends with its lease, no outcome stored (the redriver was killed
while it sent the request), counts as a failed redrive with an attempt when
the letter is claimed again: a letter that kills its redriver is parked after
--max-redrives of them, without being sent again.
` + telemetry.FlagsHelp + `
For redrive, each letter handled is an event: logged at INFO when it was
redriven, WARN when it was parked, DEBUG when it is due again, and counted in
yaoki_deadletter_redrives_total (by queue, outcome and reason); the queue's
letters by state are the gauge yaoki_deadletter_letters.
` + deadLetterHelp,
		Example: `  # one pass, with each letter's outcome
  yaoki deadletter redrive --queue webhooks --once -v

  # keep redriving until stopped; park after 10 failed redrives
  yaoki deadletter redrive --queue webhooks --max-redrives 10 --interval 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.queue == "":
				return cli.Usagef("redrive needs --queue: the queue of HTTP letters to redrive (yaoki deadletter count shows the letters; list --json their queues)")
			case o.batch < 1 || o.batch > listMax:
				return cli.Usagef("--batch %d: want 1 to %d letters per pass", o.batch, listMax)
			case o.lease.D <= 0:
				return cli.Usagef("--lease %v: want a duration > 0, e.g. 1m (each request's time)", o.lease.D)
			case o.redrives < 1 && o.redrives != retry.Unlimited:
				return cli.Usagef("--max-redrives %d: want ≥ 1 (failed redrives that park a letter), or -1 never to park for failures", o.redrives)
			case o.interval.D <= 0:
				return cli.Usagef("--interval %v: want a duration > 0, e.g. 30s", o.interval.D)
			}
			return f.withStore(cmd, "redrive", func(ctx context.Context, c *dlConn) error { return o.run(ctx, cmd, c, f.clock) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.queue, "queue", "", "the queue of HTTP letters to redrive (required)")
	fs.BoolVar(&o.once, "once", false, "make one pass, print its report and exit")
	fs.IntVar(&o.batch, "batch", o.batch, "most letters claimed per pass")
	fs.Var(&o.lease, "lease", "how long a claimed letter is held: each request's timeout")
	fs.IntVar(&o.redrives, "max-redrives", o.redrives, "failed redrives that park a letter; -1: never")
	fs.Var(&o.interval, "interval", "wait between passes that found less than a full batch")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "print each letter's outcome on stderr")
	o.obs.Register(fs)
	return cmd
}

// run serves the queue with a redriver that decides by clock, this
// machine's, until ctx ends (a signal).
func (o *redriveOptions) run(ctx context.Context, cmd *cobra.Command, c *dlConn, clock func() time.Time) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: o.lease.D,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h := httpletter.Handler(client, nil)
	if o.verbose {
		h = o.tell(ctx, stderr, h)
	}
	ob, err := o.obs.Start(cmd, "yaoki deadletter redrive")
	if err != nil {
		return err
	}
	defer ob.Stop()
	if ob.Metrics != nil {
		defer ob.Metrics.TrackDeadLetters(o.queue, c.store)()
	}
	r, err := deadletter.NewRedriver(deadletter.Config{
		Store: c.store, Queue: o.queue, Handler: h, Batch: o.batch, Lease: o.lease.D,
		MaxRedrives: o.redrives, Interval: o.interval.D, Observer: ob.Observer,
		OnPass: func(rep deadletter.Report, err error) {
			at := clock().UTC().Format(time.RFC3339)
			if err != nil {
				fmt.Fprintf(stderr, "yaoki deadletter redrive: %s pass failed after %s: %v (next pass in %v)\n", at, report(rep), err, o.interval.D)
				return
			}
			fmt.Fprintf(stderr, "yaoki deadletter redrive: %s pass: %s\n", at, report(rep))
		},
	})
	if err != nil {
		return cli.Usagef("deadletter redrive: %v", err)
	}
	// The redriver decides by this machine's clock, as each redriver of a
	// fleet does by its own: say so when it is off the database's.
	before := clock()
	dbNow, err := c.now(ctx)
	if err != nil {
		return failed("redrive", err)
	}
	after := clock()
	// The database read its clock between before and after (the first
	// connection's setup included).
	ahead, behind := before.Sub(dbNow), dbNow.Sub(after)
	if ahead > maxSkew || behind > maxSkew {
		skew, how := ahead, "ahead of"
		if behind > maxSkew {
			skew, how = behind, "behind"
		}
		fmt.Fprintf(stderr, "yaoki deadletter redrive: warning: this machine's clock is %v %s the database's; the redriver decides by it which letters are due and when its claims end: a clock that far off the other redrivers' makes them take each other's letters before their leases end\n",
			skew.Round(time.Second), how)
	}
	if o.once {
		rep, err := r.RedriveAt(ctx, clock())
		fmt.Fprintln(stdout, report(rep))
		switch {
		case err != nil && ctx.Err() != nil:
			code, by := dlFailed, ""
			if s, ok := cli.Interrupted(ctx); ok {
				code, by = s.ExitCode(), " by "+cli.SignalName(s.Signal)
			}
			return cli.Exit(code, "deadletter redrive: interrupted"+by+"; the letter being sent is claimed again when its lease ends (that redrive counted as failed), the letters not yet sent are due again now")
		case err != nil:
			return failed("redrive", err)
		}
		return nil
	}
	// Check the database and the table before the first pass, so that a
	// wrong DSN fails now rather than at every pass.
	n, err := c.store.Count(ctx, o.queue, dbNow)
	if err != nil {
		return failed("redrive", err)
	}
	most := fmt.Sprint(o.redrives)
	if o.redrives == retry.Unlimited {
		most = "unlimited"
	}
	fmt.Fprintf(stderr, "yaoki deadletter redrive: queue %s: %d due, %d waiting, %d held, %d parked; a pass every %v (batch %d, lease %v, max redrives %s); SIGINT or SIGTERM stops\n",
		oneLine(o.queue), n.Due, n.Waiting, n.Held, n.Parked, o.interval.D, o.batch, o.lease.D, most)
	_ = r.Run(ctx) // returns when ctx ends: a signal
	fmt.Fprintln(stderr, "yaoki deadletter redrive: stopped")
	return nil
}

// maxSkew is how far redrive lets this machine's clock be off the
// database's before it warns.
const maxSkew = time.Second

// report is a pass's report in words.
func report(r deadletter.Report) string {
	s := fmt.Sprintf("claimed %d, done %d, failed %d, parked %d, lease lost %d", r.Claimed, r.Done, r.Failed, r.Parked, r.LeaseLost)
	if r.Expired > 0 {
		s += fmt.Sprintf(", expired %d (not started: the lease ended first; --lease is short for the batch)", r.Expired)
	}
	if r.Deferred > 0 {
		s += fmt.Sprintf(", deferred %d (let go unstarted: a letter whose last claim ended with its lease ran alone)", r.Deferred)
	}
	return s
}

// tell wraps h to print each letter's outcome on w, as the redriver will
// decide it from h's error.
func (o *redriveOptions) tell(ctx context.Context, w io.Writer, h deadletter.Handler) deadletter.Handler {
	return func(hctx context.Context, l deadletter.Letter) error {
		err := h(hctx, l)
		var ge *retry.Error
		msg := ""
		if err != nil {
			// The handler's errors may name the letter already.
			msg = strings.TrimPrefix(err.Error(), "letter "+l.ID+": ")
		}
		what := ""
		switch {
		case err == nil:
			what = "done: deleted"
		case ctx.Err() != nil:
			what = "interrupted: " + msg
		case retry.IsPermanent(err) || errors.As(err, &ge) && ge.Reason == retry.ReasonPermanent:
			what = msg + ": permanent, parked"
		case o.redrives != retry.Unlimited && l.Redrives+1 >= o.redrives:
			what = fmt.Sprintf("%s: failed %d times, parked", msg, l.Redrives+1)
		default:
			what = msg + ": failed, redriven later"
		}
		fmt.Fprintf(w, "yaoki deadletter redrive: letter %s: %s\n", oneLine(l.ID), oneLine(what))
		return err
	}
}
