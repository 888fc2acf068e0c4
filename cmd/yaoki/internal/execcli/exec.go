package execcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/telemetry"
	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/retry"
)

// Exit codes of yaoki exec besides the command's own.
const (
	execNotExecutable = 126 // the command was found but could not be run
	execNotFound      = 127 // the command was not found
	execTimedOut      = 124 // the last attempt was ended by --attempt-timeout or --max-time
)

type execOptions struct {
	pf        flags.Policy
	obs       telemetry.Flags
	retryOn   string
	noRetryOn string
	quiet     bool
	grace     flags.Seconds
}

// NewCommand returns the yaoki exec command, built anew at each call.
func NewCommand() *cobra.Command {
	o := &execOptions{grace: flags.Seconds{D: 10 * time.Second}}
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARGS...]",
		Short: "Run a command until it succeeds, with backoff between attempts",
		Long: `exec runs COMMAND, and runs it again after a backoff wait while it fails, up to
the policy's attempts and deadline. Its standard input, output and error are
the command's. Each failed attempt and each wait is reported on stderr (-q:
only the give-up). What a failed attempt wrote is not taken back: stdout gets
every attempt's output, one after the other; to keep only the last one's,
have the command write its result to a file of its own (curl -o).

Which exit codes are retried: by default every non-zero code except 126 (not
executable), 127 (not found), those of a signal the user sent (a command
killed by SIGINT, SIGTERM, SIGHUP or SIGQUIT, or exiting 130, 143, 129 or 131)
and SIGPIPE's (141: the reader of the output went away, as in
yaoki exec -- CMD | head, and a retry would write to the same closed pipe).
--retry-on lists the codes to retry instead (e.g. 1,75,100-110; 127 retries
a command that is not there yet, 126 one that cannot be run yet);
--no-retry-on removes codes from the set.

Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to yaoki are forwarded to
the running command, and no attempt is started after them. A command still
running --grace after a timeout or a forwarded signal is killed. Each attempt
runs in a process group of its own, which gets these signals, so that what
the command started ends with it; when yaoki is in the foreground of its
terminal, the command stays in yaoki's group (it can read the terminal, and
Ctrl-C reaches it) and only the command is signalled.

Exit code: the command's last exit code (128+N if a signal N ended it);
124 if the last attempt was ended by --attempt-timeout or --max-time; 126
or 127 if the command could not be run; 128+N if signal N came during a
wait between attempts; 2 for bad usage.

Standard input: a file (yaoki exec -- CMD < input) is read from the same
place by every attempt, yaoki moving its offset back before each retry. A
pipe or a terminal is handed to every attempt as it is: a command that reads
it gets, on a retry, only what the earlier attempts left (an empty input,
once one attempt read it all); save a pipe's input to a file and redirect it
to retry a command that reads it.
` + flags.ExecPolicyHelp + "\n" + telemetry.FlagsHelp,
		Example: `  # a flaky download: up to 5 attempts, waits of up to 1s, 2s, 4s, 8s (full jitter), 1 minute in all
  yaoki exec --max-attempts 5 --base 1s --max-time 1m -- curl -fsS -o page.html http://127.0.0.1:8080/

  # retry only exit code 75 (EX_TEMPFAIL), each attempt at most 30s
  yaoki exec --retry-on 75 --attempt-timeout 30s -- ./sync.sh

  # a policy file (Step Functions Retry form) for the schedule
  yaoki exec --policy retry.json -- make deploy`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.Usagef("exec needs a command to run: yaoki exec [flags] -- COMMAND [ARGS...]")
			}
			if strings.TrimSpace(args[0]) == "" {
				return cli.Usagef("exec -- %q: the command name is empty: want a program such as ./sync.sh or curl", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	cmd.Flags().SetInterspersed(false) // flags after COMMAND are the command's
	o.pf.RegisterExec(cmd.Flags())
	o.obs.Register(cmd.Flags())
	cmd.Flags().StringVar(&o.retryOn, "retry-on", "", "exit codes to retry, e.g. 1,75,100-110 (default: every non-zero code but 126, 127, 141 and signals the user sent)")
	cmd.Flags().StringVar(&o.noRetryOn, "no-retry-on", "", "exit codes never to retry, e.g. 2,64-78")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "report only when giving up")
	cmd.Flags().Var(&o.grace, "grace", "time a command gets to exit after SIGTERM (on a timeout) or a forwarded signal, before SIGKILL")
	return cmd
}

// exitStatus is a failed attempt: its exit code, and the signal that ended
// it, if one did.
type exitStatus struct {
	code    int
	signal  syscall.Signal // 0 if it exited
	noStart error          // the command could not be started
}

func (e *exitStatus) Error() string {
	switch {
	case e.noStart != nil:
		return e.noStart.Error()
	case e.signal != 0:
		return fmt.Sprintf("killed by signal %d, %v (exit code %d)", int(e.signal), e.signal, e.code)
	}
	return fmt.Sprintf("exit code %d", e.code)
}

// ErrorName lets a policy document name exit codes: "Exit.75".
func (e *exitStatus) ErrorName() string { return "Exit." + strconv.Itoa(e.code) }

// userSignals are the signals forwarded to the command; a command ended by
// one of them was stopped by its user and is not retried by default.
var userSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

func (o *execOptions) run(cmd *cobra.Command, args []string) error {
	cp, err := o.pf.Build(cmd)
	if err != nil {
		return err
	}
	retried, err := o.codes(cmd.Flags().Changed)
	if err != nil {
		return err
	}
	named, _ := parseCodes(o.retryOn) // checked by codes
	explicit := func(code int) bool { return named[code] }
	grace := o.grace.D
	if grace == 0 {
		grace = 1 // exec.Cmd reads 0 as "wait for ever": --grace 0 is SIGKILL at once
	}
	stderr := cmd.ErrOrStderr()
	say := func(format string, a ...any) {
		if !o.quiet {
			fmt.Fprintf(stderr, "yaoki exec: "+format+"\n", a...)
		}
	}
	for _, w := range cp.Unmatchable("exec") {
		fmt.Fprintf(stderr, "yaoki exec: %s\n", w)
	}
	if cp.Attempts() == 0 && cp.Retry.MaxElapsed == 0 {
		say("warning: unlimited attempts and no --max-time: this runs until the command succeeds or you stop it")
	}

	group := ownGroup()
	adoptOrphans()
	send := func(p *os.Process, s os.Signal) error {
		if group {
			return signalGroup(p, s)
		}
		return p.Signal(s)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var (
		mu        sync.Mutex
		current   *os.Process
		pending   os.Signal    // a signal that came while no command was running, guarded by mu
		stopped   atomic.Bool  // the user sent a signal: forward it, start nothing more
		stopSig   atomic.Int32 // the first such signal
		forwarded atomic.Bool  // a running command got it: its exit code stands
		sigs      = make(chan os.Signal, 4)
		attempts  int
		last      = -1
		timedOut  atomic.Bool // the running attempt was ended by a timeout
	)
	signal.Notify(sigs, userSignals...)
	defer func() { signal.Stop(sigs); close(sigs) }() // Stop first: no send on a closed channel
	go func() {
		for s := range sigs {
			if n, ok := s.(syscall.Signal); ok {
				stopSig.CompareAndSwap(0, int32(n))
			}
			stopped.Store(true)
			mu.Lock()
			if current != nil {
				forwarded.Store(true)
				_ = send(current, s)
			} else {
				pending = s // the command is starting: it gets the signal once it runs
			}
			mu.Unlock()
			cancel()
		}
	}()

	ob, err := o.obs.Start(cmd, "yaoki exec")
	if err != nil {
		return err
	}
	defer ob.Stop()
	p := cp.Retry
	p.Env = p.Env.Clone()
	p.Env.Observer = event.Multi(p.Env.Observer, ob.Observer)
	docClassify := p.Classify
	p.Classify = func(err error) retry.Class {
		var es *exitStatus
		// A command that could not be started (126, 127) is retried only
		// when --retry-on names its code: a program that a mount or an
		// install under way makes appear.
		if !errors.As(err, &es) || es.noStart != nil && !explicit(es.code) || stopped.Load() || !retried(es) {
			return retry.ClassPermanent
		}
		if docClassify != nil {
			return docClassify(err)
		}
		return retry.ClassTransient
	}
	p.OnRetry = func(w retry.Wait) {
		of := ""
		if n := cp.Attempts(); n > 0 {
			of = fmt.Sprintf(" of %d", n)
		}
		say("attempt %d%s failed (%v); retrying in %s (%s)", w.Attempt, of, w.Err, flags.SecondsText(w.Delay), w.Source)
	}
	rewind := stdinRewinder(os.Stdin)
	start := time.Now()
	err = retry.Do(ctx, p, func(actx context.Context) error {
		if stopped.Load() {
			return retry.Permanent(errors.New("stopped by a signal"))
		}
		if attempts > 0 && rewind != nil {
			if err := rewind(); err != nil {
				return retry.Permanent(fmt.Errorf("cannot give attempt %d the standard input from its start: %w", attempts+1, err))
			}
		}
		attempts++
		c := exec.CommandContext(actx, args[0], args[1:]...)
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), stderr
		c.WaitDelay = grace
		var cancelled time.Time // when the attempt's context ended while the command ran
		c.Cancel = func() error {
			cancelled = time.Now()
			if stopped.Load() {
				return nil // the user's signal was forwarded: let the command handle it
			}
			timedOut.Store(true)
			return send(c.Process, syscall.SIGTERM)
		}
		if group {
			setGroup(c)
		}
		dieWithYaoki(c)
		timedOut.Store(false)
		if err := c.Start(); err != nil {
			code := execNotExecutable
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				code = execNotFound
			}
			last = code
			return &exitStatus{code: code, noStart: err}
		}
		mu.Lock()
		current = c.Process
		if pending != nil { // the signal came between the check above and now
			forwarded.Store(true)
			_ = send(c.Process, pending)
			pending = nil
		}
		mu.Unlock()
		// The command is no longer current once it has exited, before it
		// is reaped: a signal that comes after it exited reaches it no
		// more and counts as one sent during the wait that follows (exit
		// 128+N), not as forwarded (the command's exit code standing).
		awaitExit(c.Process.Pid)
		mu.Lock()
		current = nil
		mu.Unlock()
		werr := c.Wait()
		st := c.ProcessState
		ok := werr == nil && st != nil && st.Success()
		if !ok || !cancelled.IsZero() {
			// What the command started must not run on beside the next
			// attempt, nor after yaoki.
			deadline := time.Now().Add(grace)
			if !cancelled.IsZero() {
				deadline = cancelled.Add(grace)
			}
			endLeftovers(c.Process.Pid, group, !cancelled.IsZero(), deadline, ctx.Done())
		}
		if ok {
			last = 0
			return nil
		}
		es := &exitStatus{code: 1}
		if st != nil {
			es.code = st.ExitCode()
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				es.signal = ws.Signal()
				es.code = 128 + int(es.signal)
			}
		}
		last = es.code
		return es
	})
	if err == nil {
		if attempts > 1 {
			say("succeeded on attempt %d after %s", attempts, flags.SecondsText(time.Since(start)))
		}
		return nil
	}
	code := last
	if timedOut.Load() {
		code = execTimedOut
	}
	var re *retry.Error
	reason := err.Error()
	if errors.As(err, &re) {
		reason = re.Reason.String()
		switch re.Reason {
		case retry.ReasonDeadline:
			reason = fmt.Sprintf("deadline: the next wait (%s) would end after --max-time", flags.SecondsText(re.Wait))
			if timedOut.Load() {
				reason = fmt.Sprintf("--max-time %s passed during attempt %d, which was stopped (SIGTERM, then SIGKILL after --grace %s)",
					flags.SecondsText(cp.Retry.MaxElapsed), attempts, flags.SecondsText(o.grace.D))
			}
		case retry.ReasonPermanent:
			reason = "not retried"
			if stopped.Load() {
				reason = "stopped by a signal"
			}
		case retry.ReasonCancelled:
			reason = "stopped by a signal"
		}
	}
	var es *exitStatus
	if stopped.Load() && !forwarded.Load() && stopSig.Load() != 0 {
		// The signal came while no command ran (a wait): exit as a
		// command killed by it would, so that a calling shell stops too.
		code = 128 + int(stopSig.Load())
	}
	if errors.As(err, &es) && es.noStart != nil {
		fmt.Fprintf(stderr, "yaoki exec: cannot run %s: %v\n", args[0], es.noStart)
	} else {
		fmt.Fprintf(stderr, "yaoki exec: gave up after %d attempt%s in %s: %s; exit code %d\n",
			attempts, cli.Plural(attempts), flags.SecondsText(time.Since(start)), reason, code)
	}
	if code < 0 {
		code = 1
	}
	return cli.Exit(code, "")
}

// stdinRewinder returns, when f (yaoki's standard input) is a regular file
// (yaoki exec -- CMD < input), the function that moves its offset back to
// where it is now, so that each attempt reads the same input: the command
// shares the file's offset with yaoki, and the first attempt left it where
// it stopped reading. It returns nil for anything else (a pipe, a
// terminal), which cannot be read again.
func stdinRewinder(f *os.File) func() error {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return func() error {
		_, err := f.Seek(off, io.SeekStart)
		return err
	}
}

// codes returns the test for retried exit statuses.
//
// A flag given empty (--retry-on "$CODES" with CODES unset) is refused, as
// parseCodes refuses it, rather than read as the flag left out, which
// retries the default set of codes.
func (o *execOptions) codes(given func(name string) bool) (func(*exitStatus) bool, error) {
	var on, off map[int]bool
	var err error
	if given("retry-on") {
		if on, err = parseCodes(o.retryOn); err != nil {
			return nil, cli.Usagef("--retry-on %q: %v", o.retryOn, err)
		}
	}
	if given("no-retry-on") {
		if off, err = parseCodes(o.noRetryOn); err != nil {
			return nil, cli.Usagef("--no-retry-on %q: %v", o.noRetryOn, err)
		}
	}
	return func(es *exitStatus) bool {
		if off[es.code] {
			return false
		}
		if on != nil {
			return on[es.code]
		}
		if es.code == 0 || es.code == execNotExecutable || es.code == execNotFound {
			return false
		}
		for _, s := range userSignals {
			if es.code == 128+int(s.(syscall.Signal)) {
				return false
			}
		}
		// SIGPIPE: the reader of its output went away (yaoki exec -- CMD |
		// head); a retry would write to the same closed pipe.
		return es.code != 128+int(syscall.SIGPIPE)
	}, nil
}

// parseCodes reads "1,75,100-110".
func parseCodes(s string) (map[int]bool, error) {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b > 255 || a > b {
			return nil, fmt.Errorf("%q is not an exit code or range: want codes from 0 to 255 such as 1,75,100-110", part)
		}
		for c := a; c <= b; c++ {
			out[c] = true
		}
	}
	return out, nil
}

// ErrorType names a command's failure for the error.type attribute of
// yaoki exec's metrics and logs: "exit_N", or "not_started" when the
// command could not be started.
func (e *exitStatus) ErrorType() string {
	if e.noStart != nil {
		return "not_started"
	}
	return "exit_" + strconv.Itoa(e.code)
}
