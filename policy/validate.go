package policy

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/internal/enum"
)

// The range checks below are shared by Parse (which adds the position in
// the file) and Validate (for documents built in Go). Each returns the
// message to put after the value ("" when the value is accepted) and the
// accepted range in words.

func rangeMsg(ok bool, want string) (string, string) {
	if ok {
		return "", want
	}
	return " out of range: " + want, want
}

func checkInterval(f float64) (string, string) {
	return rangeMsg(f >= 0 && f <= MaxMaxAttempts, "want seconds from 0 to 99999999 (default 1; fractions such as 0.05 are accepted)")
}

func checkMaxDelay(f float64) (string, string) {
	return rangeMsg(f > 0 && f <= MaxDelayLimit, "want seconds > 0 and ≤ 31622400 (leave it out for no cap)")
}

func checkTimeout(f float64) (string, string) {
	return rangeMsg(f > 0 && f <= MaxMaxAttempts, "want seconds > 0 and ≤ 99999999 (leave it out for no per-attempt timeout)")
}

func checkDeadline(f float64) (string, string) {
	return rangeMsg(f > 0 && f <= MaxMaxAttempts, "want seconds > 0 and ≤ 99999999 (leave it out for no deadline)")
}

func checkMaxRetryAfter(f float64) (string, string) {
	return rangeMsg(f > 0 && f <= MaxMaxAttempts, "want seconds > 0 and ≤ 99999999 (default 60)")
}

func checkMaxAttempts(n int) (string, string) {
	return rangeMsg(n >= 0 && n <= MaxMaxAttempts, "want an integer from 0 to 99999999 (retries after the first attempt; 0: never retry; default 3)")
}

func checkTotalAttempts(n int) (string, string) {
	return rangeMsg(n >= 1 && n <= MaxMaxAttempts, "want an integer from 1 to 99999999 (attempts, counting the first)")
}

func checkBackoffRate(f float64) string {
	if f >= 1 && !math.IsInf(f, 0) {
		return ""
	}
	return " out of range: want a number ≥ 1.0 (default 2.0; 1.0 keeps every wait at IntervalSeconds)"
}

func checkKeyMode(s string) string {
	if s == "auto" || s == "off" {
		return ""
	}
	return ` is not an idempotency-key mode: want "auto" (create one key per request for POST and PATCH) or "off"`
}

// parseJitter reads a JitterStrategy; the message is "" when s is known.
func parseJitter(s string) (backoff.Jitter, string) {
	switch s {
	case "FULL":
		return backoff.Full, ""
	case "NONE":
		return backoff.None, ""
	case "EQUAL":
		return backoff.Equal, ""
	case "DECORRELATED":
		return backoff.Decorrelated, ""
	}
	msg := " is not a jitter strategy: want " + strings.Join(jitterNames, ", ")
	if up := strings.ToUpper(s); contains(jitterNames, up) {
		msg += fmt.Sprintf(" (did you mean %q? the names are upper-case)", up)
	}
	return backoff.None, msg
}

func jitterName(j backoff.Jitter) string { return strings.ToUpper(j.String()) }

// Validate checks a Document built in Go, with the same rules as Parse,
// and returns every error found (each a *Error with its JSON path but no
// line, since there is no file; the first 100, then how many more), joined
// with errors.Join.
func (d *Document) Validate() error {
	var l errs
	bad := func(path, msg string) { l.add(&Error{Path: path, Msg: msg}) }
	secs := func(path string, v time.Duration, check func(float64) (string, string)) {
		if v == 0 {
			return
		}
		f := v.Seconds()
		if msg, _ := check(f); msg != "" {
			bad(path, fmt.Sprint(f)+msg)
		}
	}
	checkNames := func(path string, names []string, last bool, what string) {
		if len(names) == 0 {
			bad(path, "ErrorEquals is empty: want at least one error name, such as States.ALL")
		}
		for i, n := range names {
			p := fmt.Sprintf("%s[%d]", path, i)
			if msg := checkName(n); msg != "" {
				bad(p, msg)
			}
			if n == All && len(names) > 1 {
				bad(p, `"States.ALL" must be alone in its ErrorEquals: it already matches every error`)
			}
			if n == All && !last {
				bad(p, fmt.Sprintf(`"States.ALL" must be in the last %s: the %ss after it would never be used`, what, what))
			}
		}
	}
	for i := range d.Retry {
		r := &d.Retry[i]
		p := fmt.Sprintf("Retry[%d]", i)
		checkNames(p+".ErrorEquals", r.ErrorEquals, i == len(d.Retry)-1, "retrier")
		if r.Interval < 0 {
			bad(p+".IntervalSeconds", fmt.Sprint(r.Interval.Seconds())+" out of range: want seconds from 0 to 99999999")
		} else {
			secs(p+".IntervalSeconds", r.Interval, checkInterval)
		}
		if msg, _ := checkMaxAttempts(r.MaxAttempts); msg != "" {
			bad(p+".MaxAttempts", fmt.Sprint(r.MaxAttempts)+msg)
		}
		if msg := checkBackoffRate(r.BackoffRate); msg != "" && r.BackoffRate != 0 {
			bad(p+".BackoffRate", fmt.Sprint(r.BackoffRate)+msg)
		}
		if r.MaxDelay < 0 {
			bad(p+".MaxDelaySeconds", fmt.Sprint(r.MaxDelay.Seconds())+" out of range: want seconds > 0 and ≤ 31622400 (0 for no cap)")
		} else {
			secs(p+".MaxDelaySeconds", r.MaxDelay, checkMaxDelay)
		}
		if r.Jitter > backoff.Decorrelated {
			bad(p+".JitterStrategy", fmt.Sprintf("%v is not a jitter strategy: want one of %s", r.Jitter, strings.Join(jitterNames, ", ")))
		}
	}
	for i, c := range d.Catch {
		p := fmt.Sprintf("Catch[%d]", i)
		checkNames(p+".ErrorEquals", c.ErrorEquals, i == len(d.Catch)-1, "catcher")
		if c.Next == "" {
			bad(p+".Next", "Next is empty: want the name of the state or handler caught errors go to")
		}
	}
	for _, f := range []struct {
		path  string
		v     time.Duration
		check func(float64) (string, string)
	}{
		{"TimeoutSeconds", d.AttemptTimeout, checkTimeout},
		{"DeadlineSeconds", d.Deadline, checkDeadline},
		{"MaxRetryAfterSeconds", d.MaxRetryAfter, checkMaxRetryAfter},
	} {
		if f.v < 0 {
			_, want := f.check(0)
			bad(f.path, fmt.Sprint(f.v.Seconds())+" out of range: "+want)
		} else {
			secs(f.path, f.v, f.check)
		}
	}
	if d.MaxTotalAttempts != 0 {
		if msg, _ := checkTotalAttempts(d.MaxTotalAttempts); msg != "" {
			bad("MaxTotalAttempts", fmt.Sprint(d.MaxTotalAttempts)+msg)
		}
	}
	d.validateGuards(bad)
	if d.Mode > Off {
		bad("RetryMode", fmt.Sprintf("%v is not a retry mode: want %s", d.Mode, enum.List(modeNames[:])))
	}
	if d.IdempotencyKey != "" {
		if msg := checkKeyMode(d.IdempotencyKey); msg != "" {
			bad("IdempotencyKey", quote(d.IdempotencyKey)+msg)
		}
	}
	return l.err()
}
