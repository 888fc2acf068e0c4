package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/backoff"
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
YAOKI_MAX_ATTEMPTS (attempts, counting the first) and YAOKI_RETRY_MODE
(standard, adaptive or off; off makes one attempt).
Durations are Go durations (250ms, 1.5s, 2m) or plain seconds (0.25).`

func (f *policyFlags) register(fs *pflag.FlagSet) { f.registerShort(fs, "") }

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
	fs.Var(&f.maxRetryAfter, "max-retry-after", "longest server Retry-After honoured; a longer one ends the run (default 60s)")
}

// cliPolicy is the policy a command runs: a document when --policy was
// given, else a retry.Policy built from the flags.
type cliPolicy struct {
	doc    *policy.Document // nil without --policy
	retry  retry.Policy     // what runs the calls
	source string           // "flags" or the file's name
	mode   policy.Mode      // the retry mode that applies
	// modeFrom says where the mode came from: "default", the file's name,
	// "$YAOKI_RETRY_MODE" or "--retry-mode".
	modeFrom string
}

// modeText says which retry mode applies and where it came from, e.g.
// "adaptive, from $YAOKI_RETRY_MODE".
func (c *cliPolicy) modeText() string {
	from := c.modeFrom
	if from == "" {
		from = "default"
	}
	return fmt.Sprintf("%s, from %s", c.mode, from)
}

// attempts returns the attempt limit (0: unlimited).
func (c *cliPolicy) attempts() int {
	if c.doc != nil {
		return c.doc.Attempts()
	}
	return c.retry.Attempts()
}

// build applies the file, the environment and the flags, in that order.
func (f *policyFlags) build(cmd *cobra.Command) (*cliPolicy, error) {
	changed := cmd.Flags().Changed
	if f.file != "" {
		for _, name := range []string{"base", "throttle-base", "cap", "multiplier", "jitter"} {
			if changed(name) {
				return nil, usagef("--%s cannot be combined with --policy: set the schedule in the file (IntervalSeconds, MaxDelaySeconds, BackoffRate, JitterStrategy), or drop --policy", name)
			}
		}
		doc, err := loadDocument(f.file)
		if err != nil {
			return nil, usagef("%v", err)
		}
		if err := doc.ApplyEnv(os.LookupEnv); err != nil {
			return nil, usagef("%v", err)
		}
		if changed("max-attempts") {
			if f.maxAttempts < 1 {
				return nil, usagef("--max-attempts %d with --policy: want ≥ 1 (attempts, counting the first); the file's retriers bound the rest", f.maxAttempts)
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
			doc.MaxRetryAfter = f.maxRetryAfter.d
		}
		if err := doc.Validate(); err != nil {
			return nil, usagef("%v", err)
		}
		return &cliPolicy{doc: doc, retry: doc.Policy(policy.Options{}), source: f.file}, nil
	}

	p := retry.Policy{MaxElapsed: f.maxTime.d, AttemptTimeout: f.attemptTimeout.d, MaxRetryAfter: f.maxRetryAfter.d,
		ThrottleBase: f.throttleBase.d, Backoff: backoff.Schedule{Base: f.base.d, Cap: f.cap.d, Multiplier: f.multiplier}}
	// backoff and retry read 0 as their default: 1 ns is "at once".
	if changed("base") && f.base.d == 0 {
		p.Backoff.Base = 1
	}
	if changed("throttle-base") && f.throttleBase.d == 0 {
		p.ThrottleBase = 1
	}
	if f.jitter != "" {
		j, err := backoff.ParseJitter(f.jitter)
		if err != nil {
			return nil, usagef("--jitter %q: want full, equal, decorrelated or none", f.jitter)
		}
		p.Backoff.Jitter = j
	}
	doc := &policy.Document{}
	if err := doc.ApplyEnv(os.LookupEnv); err != nil {
		return nil, usagef("%v", err)
	}
	p.MaxAttempts = doc.MaxTotalAttempts
	if changed("max-attempts") {
		switch {
		case f.maxAttempts == -1:
			p.MaxAttempts = retry.Unlimited
		case f.maxAttempts < 1:
			return nil, usagef("--max-attempts %d: want ≥ 1 (attempts, counting the first) or -1 for unlimited", f.maxAttempts)
		default:
			p.MaxAttempts = f.maxAttempts
		}
	}
	switch doc.Mode {
	case policy.Off:
		p.MaxAttempts = 1
	case policy.Adaptive:
		a, err := throttle.NewAdaptive(throttle.AdaptiveConfig{})
		if err != nil {
			return nil, usagef("%v", err)
		}
		p.Env = &retry.Env{Throttle: a}
	}
	if p.Backoff.Multiplier != 0 && !(p.Backoff.Multiplier > 1) {
		return nil, usagef("--multiplier %v: want a number > 1 (2 doubles each wait)", p.Backoff.Multiplier)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return &cliPolicy{retry: p, source: "flags"}, nil
}

// loadDocument reads a policy file: YAML when its name ends in .yaml or
// .yml, JSON otherwise.
func loadDocument(path string) (*policy.Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the policy file: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		js, err := yamlToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("policy: %s: %v", path, err)
		}
		return policy.ParseFile(path, js)
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && !bytes.ContainsAny(t[:1], `{["`) {
		return nil, fmt.Errorf("policy: %s: the file does not start with {, [ or \": is it YAML? name it .yaml or .yml", path)
	}
	return policy.ParseFile(path, data)
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
		if f < 0 || f > math.MaxInt64/float64(time.Second) || math.IsNaN(f) {
			return 0, fmt.Errorf("%q out of range: want seconds ≥ 0", v)
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

// usagef is a bad-usage error: exit code 2 and a message that says what to
// do.
func usagef(format string, args ...any) error {
	return exit(ExitUsage, fmt.Sprintf(format, args...))
}
