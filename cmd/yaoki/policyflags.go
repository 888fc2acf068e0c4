package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// policyFlags are the retry-policy flags that plan, exec and http share.
// Precedence, lowest first: yaoki's defaults, the --policy file, the
// environment (YAOKI_MAX_ATTEMPTS, YAOKI_RETRY_MODE), the flags.
type policyFlags struct {
	file           string
	maxAttempts    int
	maxTime        seconds
	base           seconds
	throttleBase   seconds
	cap            seconds
	multiplier     float64
	jitter         string
	attemptTimeout seconds
	maxRetryAfter  seconds
	mode           string
}

// policyFlagsHelp is appended to the long help of each command that takes
// the flags.
const policyFlagsHelp = `
Policy: without --policy, the flags make one schedule for every retried error:
exponential backoff ×--multiplier from --base (from --throttle-base for 429
and 503 answers), capped at --cap, with --jitter.
--policy FILE loads a document in JSON or YAML whose Retry block reads like an
AWS Step Functions task's (see docs/policy.md); --max-attempts,
--max-time, --attempt-timeout and --max-retry-after then override the file.
The environment overrides the file and is overridden by flags:
YAOKI_MAX_ATTEMPTS (attempts, counting the first; --max-attempts beats it)
and YAOKI_RETRY_MODE (standard, adaptive or off; --retry-mode beats it, and
--max-attempts beats its off).
Durations are Go durations (250ms, 1.5s, 2m) or plain seconds (0.25).` + "\n" + retryModesHelp

func (f *policyFlags) register(fs *pflag.FlagSet) { f.registerShort(fs, "") }

// registerExec registers the flags that apply to commands that are not
// HTTP: without --throttle-base and --max-retry-after, since an exit code
// is never a throttling answer nor carries a server's hint.
func (f *policyFlags) registerExec(fs *pflag.FlagSet) {
	f.registerShort(fs, "")
	for _, name := range []string{"throttle-base", "max-retry-after"} {
		fs.Lookup(name).Hidden = true
		_ = fs.SetAnnotation(name, notForExec, []string{"true"})
	}
}

// notForExec marks the policy flags that exec refuses.
const notForExec = "yaoki/not-for-exec"

// execPolicyFlagsHelp is policyFlagsHelp for exec, without the flags that
// do not apply to it.
var execPolicyFlagsHelp = strings.NewReplacer(
	" (from --throttle-base for 429\nand 503 answers)", "",
	"--max-time, --attempt-timeout and --max-retry-after then", "--max-time and --attempt-timeout then",
).Replace(policyFlagsHelp)

// registerShort registers the flags, --max-time with the shorthand
// maxTimeShort ("m" for yaoki http, as curl's -m).
func (f *policyFlags) registerShort(fs *pflag.FlagSet, maxTimeShort string) {
	fs.StringVar(&f.file, "policy", "", "load the policy from a JSON or YAML document (Step Functions Retry form)")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts, counting the first (default 3; -1: unlimited, bound it with --max-time)")
	fs.VarP(&f.maxTime, "max-time", maxTimeShort, "bound on the whole run, attempts and waits (default: none)")
	fs.Var(&f.base, "base", "wait before the first retry, before jitter (default 50ms)")
	fs.Var(&f.throttleBase, "throttle-base", "wait before the first retry of a throttling answer (429, 503), before jitter (default 1s)")
	fs.Var(&f.cap, "cap", "largest single wait (default 20s)")
	fs.Float64Var(&f.multiplier, "multiplier", 0, "growth of the wait per retry, > 1 (default 2)")
	fs.StringVar(&f.jitter, "jitter", "", "full, equal, decorrelated or none (default full)")
	fs.Var(&f.attemptTimeout, "attempt-timeout", "bound on each attempt; a timed-out attempt is retried (default: none)")
	fs.Var(&f.maxRetryAfter, "max-retry-after", "longest server Retry-After honoured; a longer one ends the run (default 60s; 0: none)")
	fs.StringVar(&f.mode, "retry-mode", "", "standard, adaptive or off, as AWS_RETRY_MODE (beats YAOKI_RETRY_MODE; default: yaoki's own guards)")
}

// cliPolicy is the policy a command runs: a document when --policy was
// given, else a retry.Policy built from the flags.
type cliPolicy struct {
	doc    *policy.Document // nil without --policy
	retry  retry.Policy     // what runs the calls
	source string           // "flags" or the file's name
	// mode is the retry mode that applies: "default" (the command's own
	// guards, if it keeps any), "standard", "adaptive" or "off".
	mode string
	// modeFrom says where the mode came from: "default", the file's
	// name, "$YAOKI_RETRY_MODE" or "--retry-mode", and what overrode it.
	modeFrom string
}

// modeText says which retry mode applies and where it came from, e.g.
// "adaptive, from $YAOKI_RETRY_MODE".
func (c *cliPolicy) modeText() string {
	if c.mode == "default" {
		return "default (no AWS retry mode asked for)"
	}
	return fmt.Sprintf("%s, from %s", c.mode, c.modeFrom)
}

// attempts returns the attempt limit (0: unlimited).
func (c *cliPolicy) attempts() int {
	if c.doc != nil {
		return c.doc.Attempts()
	}
	return c.retry.Attempts()
}

// retryModes says what each YAOKI_RETRY_MODE (and --retry-mode) value
// means; it copies AWS_RETRY_MODE in the AWS SDKs' 2026 retry behaviour.
const retryModesHelp = `
Retry modes (--retry-mode, or YAOKI_RETRY_MODE as AWS_RETRY_MODE, in the AWS
SDKs' 2026 retry behaviour; see docs/cli.md):
  standard  the AWS retry quota: a bucket of 500 tokens, a retry takes 14
            (5 after a throttling answer), a successful retry gives 14 back,
            a first-attempt success adds 1; backoff from 50ms (1s after 429
            or 503), capped at 20s; 3 attempts
  adaptive  standard, and the AWS client-side rate limiter (CUBIC): after a
            throttling answer, attempts wait for a token at a rate that drops
            to 70% of the measured one and grows back along a cubic curve
  off       one attempt, no retry (yaoki's own; AWS has no such mode)
Without a mode, yaoki's own guards apply: proxy keeps a retry budget per
host (a gRPC-style bucket of 10 tokens, budget.Recommended; with --redis,
one budget shared by the fleet); http and exec, one call per process, keep
none. legacy, each AWS SDK's older behaviour, has no equivalent and is
refused.`

// resolveMode returns the retry mode and where it came from: --retry-mode
// beats YAOKI_RETRY_MODE, which beats the file's RetryMode.
func (f *policyFlags) resolveMode(cmd *cobra.Command, fileMode, file string) (mode, from string, err error) {
	mode, from = "default", "default"
	if fileMode != "" {
		mode, from = fileMode, file
	}
	if v, ok := os.LookupEnv(policy.EnvRetryMode); ok && strings.TrimSpace(v) != "" {
		m, err := parseModeName(strings.TrimSpace(v), "$"+policy.EnvRetryMode)
		if err != nil {
			return "", "", err
		}
		mode, from = m, "$"+policy.EnvRetryMode
	}
	if cmd.Flags().Changed("retry-mode") {
		m, err := parseModeName(f.mode, "--retry-mode")
		if err != nil {
			return "", "", err
		}
		mode, from = m, "--retry-mode"
	}
	return mode, from, nil
}

func parseModeName(v, where string) (string, error) {
	switch m := strings.ToLower(v); m {
	case "standard", "adaptive", "off":
		return m, nil
	case "legacy":
		return "", usagef("%s %q: legacy is each AWS SDK's own older behaviour and has no equivalent here: want standard, adaptive or off", where, v)
	}
	return "", usagef("%s %q is not a retry mode: want standard, adaptive or off", where, v)
}

// modeEnv returns the guards of an AWS retry mode: the 2026 retry quota,
// and for adaptive the CUBIC client-side rate limiter.
func modeEnv(mode string) (*retry.Env, error) {
	if mode != "standard" && mode != "adaptive" {
		return nil, nil
	}
	quota, err := budget.NewBucket(budget.BucketConfig{})
	if err != nil {
		return nil, err
	}
	e := &retry.Env{Budget: quota}
	if mode == "adaptive" {
		c, err := throttle.NewCubic(throttle.CubicConfig{})
		if err != nil {
			return nil, err
		}
		e.Throttle = c
	}
	return e, nil
}

// build applies the file, the environment and the flags, in that order.
func (f *policyFlags) build(cmd *cobra.Command) (*cliPolicy, error) {
	changed := cmd.Flags().Changed
	var notHere error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && fl.Annotations[notForExec] != nil && notHere == nil {
			notHere = usagef("--%s does not apply to %s: a command's exit code is never a throttling answer nor carries a server's hint", fl.Name, cmd.Name())
		}
	})
	if notHere != nil {
		return nil, notHere
	}
	for _, z := range []struct {
		name string
		zero bool
		want string
	}{
		{"max-time", f.maxTime.d == 0, "a bound > 0 such as 30s (leave it out for none)"},
		{"attempt-timeout", f.attemptTimeout.d == 0, "a bound > 0 such as 5s (leave it out for none)"},
		{"multiplier", f.multiplier == 0, "a number > 1 (2 doubles each wait)"},
	} {
		if changed(z.name) && z.zero {
			return nil, usagef("--%s 0: want %s", z.name, z.want)
		}
	}
	// retry reads 0 as "the default": for these flags 0 is meaningful,
	// and 1 ns is the closest the policy can say.
	maxRetryAfter := f.maxRetryAfter.d
	if changed("max-retry-after") && maxRetryAfter == 0 {
		maxRetryAfter = 1 // honour no server hint longer than 0 s
	}
	if f.file != "" {
		for _, name := range []string{"base", "throttle-base", "cap", "multiplier", "jitter"} {
			if changed(name) {
				return nil, usagef("--%s cannot be combined with --policy: set the schedule in the file (IntervalSeconds, MaxDelaySeconds, BackoffRate, JitterStrategy), or drop --policy", name)
			}
		}
		doc, err := policyfile.Load(f.file)
		if err != nil {
			return nil, usagef("%v", err)
		}
		fileMode := ""
		if doc.Mode != policy.Standard || fileNamesMode(f.file) {
			fileMode = doc.Mode.String()
		}
		mode, from, err := f.resolveMode(cmd, fileMode, f.file)
		if err != nil {
			return nil, err
		}
		if err := doc.ApplyEnv(envWithout(policy.EnvRetryMode)); err != nil {
			return nil, usagef("%v", err)
		}
		doc.Mode = policy.Standard
		if mode == "off" {
			doc.Mode = policy.Off
		}
		if changed("max-attempts") {
			if f.maxAttempts < 1 {
				return nil, usagef("--max-attempts %d with --policy: want ≥ 1 (attempts, counting the first); the file's retriers bound the rest", f.maxAttempts)
			}
			if mode == "off" {
				if from == "--retry-mode" {
					return nil, usagef("--retry-mode off and --max-attempts %d contradict each other: off makes one attempt", f.maxAttempts)
				}
				doc.Mode, mode, from = policy.Standard, "standard", from+" (off), overridden by --max-attempts"
			}
			doc.MaxTotalAttempts = f.maxAttempts
		}
		if changed("max-time") {
			doc.Deadline = f.maxTime.d
		}
		if changed("attempt-timeout") {
			doc.AttemptTimeout = f.attemptTimeout.d
		}
		if changed("max-retry-after") {
			doc.MaxRetryAfter = maxRetryAfter
		}
		if err := doc.Validate(); err != nil {
			return nil, usagef("%v", err)
		}
		env, err := modeEnv(mode)
		if err != nil {
			return nil, usagef("%v", err)
		}
		base := retry.Policy{Env: env}
		if env != nil && doc.Budget != nil {
			env.Budget = nil // the file's own budget
		}
		return &cliPolicy{doc: doc, retry: doc.Policy(policy.Options{Base: base, Throttle: envThrottle(env)}), source: f.file, mode: mode, modeFrom: from}, nil
	}

	p := retry.Policy{MaxElapsed: f.maxTime.d, AttemptTimeout: f.attemptTimeout.d, MaxRetryAfter: maxRetryAfter,
		ThrottleBase: f.throttleBase.d, Backoff: backoff.Schedule{Base: f.base.d, Cap: f.cap.d, Multiplier: f.multiplier}}
	// backoff and retry read 0 as their default: 1 ns is "at once".
	if changed("base") && f.base.d == 0 {
		p.Backoff.Base = 1
	}
	if changed("throttle-base") && f.throttleBase.d == 0 {
		p.ThrottleBase = 1
	}
	if changed("cap") && f.cap.d == 0 {
		p.Backoff.Cap = 1
	}
	if f.jitter != "" {
		j, err := backoff.ParseJitter(f.jitter)
		if err != nil {
			return nil, usagef("--jitter %q: want full, equal, decorrelated or none", f.jitter)
		}
		p.Backoff.Jitter = j
	}
	mode, from, err := f.resolveMode(cmd, "", "")
	if err != nil {
		return nil, err
	}
	doc := &policy.Document{}
	if err := doc.ApplyEnv(envWithout(policy.EnvRetryMode)); err != nil {
		return nil, usagef("%v", err)
	}
	p.MaxAttempts = doc.MaxTotalAttempts
	if mode == "off" {
		p.MaxAttempts = 1
	}
	if changed("max-attempts") {
		if mode == "off" {
			if from == "--retry-mode" {
				return nil, usagef("--retry-mode off and --max-attempts %d contradict each other: off makes one attempt", f.maxAttempts)
			}
			mode, from = "standard", from+" (off), overridden by --max-attempts"
		}
		switch {
		case f.maxAttempts == -1:
			p.MaxAttempts = retry.Unlimited
		case f.maxAttempts < 1:
			return nil, usagef("--max-attempts %d: want ≥ 1 (attempts, counting the first) or -1 for unlimited", f.maxAttempts)
		default:
			p.MaxAttempts = f.maxAttempts
		}
	}
	if p.Env, err = modeEnv(mode); err != nil {
		return nil, usagef("%v", err)
	}
	if p.Backoff.Multiplier != 0 && !(p.Backoff.Multiplier > 1) {
		return nil, usagef("--multiplier %v: want a number > 1 (2 doubles each wait)", p.Backoff.Multiplier)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return &cliPolicy{retry: p, source: "flags", mode: mode, modeFrom: from}, nil
}

// envThrottle returns e's throttle, nil if none.
func envThrottle(e *retry.Env) retry.Throttle {
	if e == nil {
		return nil
	}
	return e.Throttle
}

// envWithout is os.LookupEnv with name unset: the retry mode is resolved
// by resolveMode, with the flags' precedence.
func envWithout(name string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == name {
			return "", false
		}
		return os.LookupEnv(k)
	}
}

// fileNamesMode reports whether the policy file sets RetryMode (standard
// is the zero value, so the parsed document cannot tell).
func fileNamesMode(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte("RetryMode"))
}

// seconds is a duration flag that accepts Go durations and plain seconds.
type seconds struct{ d time.Duration }

func (s *seconds) String() string {
	if s.d == 0 {
		return ""
	}
	return s.d.String()
}

func (s *seconds) Set(v string) error {
	d, err := parseSeconds(v)
	if err != nil {
		return err
	}
	s.d = d
	return nil
}

func (s *seconds) Type() string { return "duration" }

func parseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		// ≥: the bound as a float64, in nanoseconds, rounds up to 2⁶³,
		// which a time.Duration does not hold.
		if f < 0 || f >= math.MaxInt64/float64(time.Second) || math.IsNaN(f) {
			return 0, fmt.Errorf("%q out of range: want seconds from 0 to 9223372036 (292 years)", v)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want e.g. 250ms, 1.5s, 2m or plain seconds", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative: want a duration ≥ 0", v)
	}
	return d, nil
}

// unmatchable returns a warning for each retrier of the document that can
// never match an error of command ("exec" or "http"): exec's errors are
// Exit.<code> and States.Timeout, http's are HTTP.<status>, Net.* and
// States.Timeout, never Exit.<code>.
func (c *cliPolicy) unmatchable(command string) []string {
	if c.doc == nil {
		return nil
	}
	foreign, have := []string{"HTTP.", "Net."}, "Exit.<code> and States.Timeout"
	if command == "http" {
		foreign, have = []string{"Exit."}, "HTTP.<status>, Net.* and States.Timeout"
	}
	var out []string
	for i, r := range c.doc.Retry {
		never := true
		for _, n := range r.ErrorEquals {
			f := false
			for _, p := range foreign {
				f = f || strings.HasPrefix(n, p)
			}
			never = never && f
		}
		if never {
			out = append(out, fmt.Sprintf("warning: Retry[%d] (%s) can never match: %s's errors are %s", i, strings.Join(r.ErrorEquals, ", "), command, have))
		}
	}
	return out
}
