package flags

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
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/policyfile"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/throttle"
)

// Policy are the retry-policy flags that plan, exec and http share.
// Precedence, lowest first: yaoki's defaults, the --policy file, the
// environment (YAOKI_MAX_ATTEMPTS, YAOKI_RETRY_MODE), the flags.
type Policy struct {
	file           string
	MaxAttempts    int
	maxTime        Seconds
	base           Seconds
	throttleBase   Seconds
	cap            Seconds
	multiplier     float64
	jitter         string
	attemptTimeout Seconds
	maxRetryAfter  Seconds
	mode           string
}

// PolicyHelp is appended to the long help of each command that takes
// the flags.
const PolicyHelp = `
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

// Register registers the flags on fs.
func (f *Policy) Register(fs *pflag.FlagSet) { f.RegisterShort(fs, "") }

// RegisterExec registers the flags that apply to commands that are not
// HTTP: without --throttle-base and --max-retry-after, since an exit code
// is never a throttling answer nor carries a server's hint.
func (f *Policy) RegisterExec(fs *pflag.FlagSet) {
	f.RegisterShort(fs, "")
	for _, name := range []string{"throttle-base", "max-retry-after"} {
		fs.Lookup(name).Hidden = true
		_ = fs.SetAnnotation(name, notForExec, []string{"true"})
	}
}

// notForExec marks the policy flags that exec refuses.
const notForExec = "yaoki/not-for-exec"

// ExecPolicyHelp is PolicyHelp for exec, without the flags that
// do not apply to it.
var ExecPolicyHelp = strings.NewReplacer(
	" (from --throttle-base for 429\nand 503 answers)", "",
	"--max-time, --attempt-timeout and --max-retry-after then", "--max-time and --attempt-timeout then",
).Replace(PolicyHelp)

// RegisterShort registers the flags, --max-time with the shorthand
// maxTimeShort ("m" for yaoki http, as curl's -m).
func (f *Policy) RegisterShort(fs *pflag.FlagSet, maxTimeShort string) {
	fs.StringVar(&f.file, "policy", "", "load the policy from a JSON or YAML document (Step Functions Retry form)")
	fs.IntVar(&f.MaxAttempts, "max-attempts", 0, "attempts, counting the first (default 3; -1: unlimited, bound it with --max-time)")
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

// Resolved is the policy a command runs: a document when --policy was
// given, else a retry.Policy built from the flags.
type Resolved struct {
	Doc    *policy.Document // nil without --policy
	Retry  retry.Policy     // what runs the calls
	Source string           // "flags" or the file's name
	// mode is the retry mode that applies: "default" (the command's own
	// guards, if it keeps any), "standard", "adaptive" or "off".
	Mode string
	// ModeFrom says where the mode came from: "default", the file's
	// name, "$YAOKI_RETRY_MODE" or "--retry-mode", and what overrode it.
	ModeFrom string
}

// ModeText says which retry mode applies and where it came from, e.g.
// "adaptive, from $YAOKI_RETRY_MODE".
func (c *Resolved) ModeText() string {
	if c.Mode == "default" {
		return "default (no AWS retry mode asked for)"
	}
	return fmt.Sprintf("%s, from %s", c.Mode, c.ModeFrom)
}

// Attempts returns the attempt limit (0: unlimited).
func (c *Resolved) Attempts() int {
	if c.Doc != nil {
		return c.Doc.Attempts()
	}
	return c.Retry.Attempts()
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
func (f *Policy) resolveMode(cmd *cobra.Command, fileMode, file string) (mode, from string, err error) {
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
		return "", cli.Usagef("%s %q: legacy is each AWS SDK's own older behaviour and has no equivalent here: want standard, adaptive or off", where, v)
	}
	return "", cli.Usagef("%s %q is not a retry mode: want standard, adaptive or off", where, v)
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

// Build applies the file, the environment and the flags, in that order.
func (f *Policy) Build(cmd *cobra.Command) (*Resolved, error) {
	changed := cmd.Flags().Changed
	var notHere error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed && fl.Annotations[notForExec] != nil && notHere == nil {
			notHere = cli.Usagef("--%s does not apply to %s: a command's exit code is never a throttling answer nor carries a server's hint", fl.Name, cmd.Name())
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
		{"max-time", f.maxTime.D == 0, "a bound > 0 such as 30s (leave it out for none)"},
		{"attempt-timeout", f.attemptTimeout.D == 0, "a bound > 0 such as 5s (leave it out for none)"},
		{"multiplier", f.multiplier == 0, "a number > 1 (2 doubles each wait)"},
	} {
		if changed(z.name) && z.zero {
			return nil, cli.Usagef("--%s 0: want %s", z.name, z.want)
		}
	}
	// retry reads 0 as "the default": for these flags 0 is meaningful,
	// and 1 ns is the closest the policy can say.
	maxRetryAfter := f.maxRetryAfter.D
	if changed("max-retry-after") && maxRetryAfter == 0 {
		maxRetryAfter = 1 // honour no server hint longer than 0 s
	}
	if f.file != "" {
		for _, name := range []string{"base", "throttle-base", "cap", "multiplier", "jitter"} {
			if changed(name) {
				return nil, cli.Usagef("--%s cannot be combined with --policy: set the schedule in the file (IntervalSeconds, MaxDelaySeconds, BackoffRate, JitterStrategy), or drop --policy", name)
			}
		}
		doc, err := policyfile.Load(f.file)
		if err != nil {
			return nil, cli.Usagef("%v", err)
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
			return nil, cli.Usagef("%v", err)
		}
		doc.Mode = policy.Standard
		if mode == "off" {
			doc.Mode = policy.Off
		}
		if changed("max-attempts") {
			if f.MaxAttempts < 1 {
				return nil, cli.Usagef("--max-attempts %d with --policy: want ≥ 1 (attempts, counting the first); the file's retriers bound the rest", f.MaxAttempts)
			}
			if mode == "off" {
				if from == "--retry-mode" {
					return nil, cli.Usagef("--retry-mode off and --max-attempts %d contradict each other: off makes one attempt", f.MaxAttempts)
				}
				doc.Mode, mode, from = policy.Standard, "standard", from+" (off), overridden by --max-attempts"
			}
			doc.MaxTotalAttempts = f.MaxAttempts
		}
		if changed("max-time") {
			doc.Deadline = f.maxTime.D
		}
		if changed("attempt-timeout") {
			doc.AttemptTimeout = f.attemptTimeout.D
		}
		if changed("max-retry-after") {
			doc.MaxRetryAfter = maxRetryAfter
		}
		if err := doc.Validate(); err != nil {
			return nil, cli.Usagef("%v", err)
		}
		env, err := modeEnv(mode)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		base := retry.Policy{Env: env}
		if env != nil && doc.Budget != nil {
			env.Budget = nil // the file's own budget
		}
		return &Resolved{Doc: doc, Retry: doc.Policy(policy.Options{Base: base, Throttle: envThrottle(env)}), Source: f.file, Mode: mode, ModeFrom: from}, nil
	}

	p := retry.Policy{MaxElapsed: f.maxTime.D, AttemptTimeout: f.attemptTimeout.D, MaxRetryAfter: maxRetryAfter,
		ThrottleBase: f.throttleBase.D, Backoff: backoff.Schedule{Base: f.base.D, Cap: f.cap.D, Multiplier: f.multiplier}}
	// backoff and retry read 0 as their default: 1 ns is "at once".
	if changed("base") && f.base.D == 0 {
		p.Backoff.Base = 1
	}
	if changed("throttle-base") && f.throttleBase.D == 0 {
		p.ThrottleBase = 1
	}
	if changed("cap") && f.cap.D == 0 {
		p.Backoff.Cap = 1
	}
	if f.jitter != "" {
		j, err := backoff.ParseJitter(f.jitter)
		if err != nil {
			return nil, cli.Usagef("--jitter %q: want full, equal, decorrelated or none", f.jitter)
		}
		p.Backoff.Jitter = j
	}
	mode, from, err := f.resolveMode(cmd, "", "")
	if err != nil {
		return nil, err
	}
	doc := &policy.Document{}
	if err := doc.ApplyEnv(envWithout(policy.EnvRetryMode)); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	p.MaxAttempts = doc.MaxTotalAttempts
	if mode == "off" {
		p.MaxAttempts = 1
	}
	if changed("max-attempts") {
		if mode == "off" {
			if from == "--retry-mode" {
				return nil, cli.Usagef("--retry-mode off and --max-attempts %d contradict each other: off makes one attempt", f.MaxAttempts)
			}
			mode, from = "standard", from+" (off), overridden by --max-attempts"
		}
		switch {
		case f.MaxAttempts == -1:
			p.MaxAttempts = retry.Unlimited
		case f.MaxAttempts < 1:
			return nil, cli.Usagef("--max-attempts %d: want ≥ 1 (attempts, counting the first) or -1 for unlimited", f.MaxAttempts)
		default:
			p.MaxAttempts = f.MaxAttempts
		}
	}
	if p.Env, err = modeEnv(mode); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if p.Backoff.Multiplier != 0 && !(p.Backoff.Multiplier > 1) {
		return nil, cli.Usagef("--multiplier %v: want a number > 1 (2 doubles each wait)", p.Backoff.Multiplier)
	}
	if err := p.Validate(); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return &Resolved{Retry: p, Source: "flags", Mode: mode, ModeFrom: from}, nil
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

// Seconds is a duration flag that accepts Go durations and plain seconds.
type Seconds struct{ D time.Duration }

// String writes the duration as Go does.
func (s *Seconds) String() string {
	if s.D == 0 {
		return ""
	}
	return s.D.String()
}

// Set reads a Go duration or plain seconds (ParseSeconds).
func (s *Seconds) Set(v string) error {
	d, err := ParseSeconds(v)
	if err != nil {
		return err
	}
	s.D = d
	return nil
}

// Type names the flag's kind in the help: duration.
func (s *Seconds) Type() string { return "duration" }

// ParseSeconds reads a duration flag's value: a Go duration (250ms, 1.5s,
// 2m) or plain seconds (0.25), ≥ 0; its errors quote v and say what is
// accepted.
func ParseSeconds(v string) (time.Duration, error) {
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

// Unmatchable returns a warning for each retrier of the document that can
// never match an error of command ("exec" or "http"): exec's errors are
// Exit.<code> and States.Timeout, http's are HTTP.<status>, Net.* and
// States.Timeout, never Exit.<code>.
func (c *Resolved) Unmatchable(command string) []string {
	if c.Doc == nil {
		return nil
	}
	foreign, have := []string{"HTTP.", "Net."}, "Exit.<code> and States.Timeout"
	if command == "http" {
		foreign, have = []string{"Exit."}, "HTTP.<status>, Net.* and States.Timeout"
	}
	var out []string
	for i, r := range c.Doc.Retry {
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

// SecondsText writes a duration in seconds with its unit, to the
// millisecond ("0.003s", "1.204s"), or to the microsecond below one
// ("0.000412s"); below half a microsecond (the loop's 1 ns "at once"), as 0
// is written ("0.000s"), not as "0s".
func SecondsText(d time.Duration) string {
	if d >= time.Microsecond/2 && d < time.Millisecond {
		return strconv.FormatFloat(d.Round(time.Microsecond).Seconds(), 'f', -1, 64) + "s"
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}
