package flaky

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/flags"
)

// step is one answer of the flaky server: a status (or a reset), with a
// Retry-After and a delay before answering.
type step struct {
	status     int           // 0 with reset
	reset      bool          // close the connection with a TCP reset instead of answering
	retryAfter int           // seconds; -1: no header
	dateAfter  bool          // send Retry-After as an HTTP date retryAfter seconds ahead
	slow       time.Duration // wait before answering
	cut        bool          // send half the body announced, then close the connection
}

func (s step) String() string {
	var b strings.Builder
	if s.reset {
		b.WriteString("reset")
	} else {
		b.WriteString(strconv.Itoa(s.status))
	}
	if s.retryAfter >= 0 {
		if s.dateAfter {
			fmt.Fprintf(&b, ":retry-after=date+%d", s.retryAfter)
		} else {
			fmt.Fprintf(&b, ":retry-after=%d", s.retryAfter)
		}
	}
	if s.slow > 0 {
		fmt.Fprintf(&b, ":slow=%v", s.slow)
	}
	if s.cut {
		b.WriteString(":cut")
	}
	return b.String()
}

// parseScript reads a script such as "503,429:retry-after=2,200": answers
// separated by commas, each a status from 200 to 599 or "reset", followed
// by options separated by colons: retry-after=SECONDS, retry-after=date+SECONDS
// (an HTTP date that many seconds ahead), slow=DURATION, cut (the body
// cut halfway: the link cut as the answer comes).
func parseScript(s string) ([]step, error) {
	var out []step
	for i, part := range strings.Split(s, ",") {
		st, err := parseStep(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("step %d %q: %v", i+1, part, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func parseStep(s string) (step, error) {
	fields := strings.Split(s, ":")
	st := step{retryAfter: -1}
	switch head := fields[0]; {
	case head == "reset":
		st.reset = true
	case head == "":
		return st, fmt.Errorf("empty: want a status such as 503, or reset")
	default:
		code, err := strconv.Atoi(head)
		if err != nil || code < 100 || code > 599 {
			return st, fmt.Errorf("%q is not a status: want a status from 200 to 599, or reset", head)
		}
		if code < 200 {
			// net/http would send a 1xx as an interim answer and then a
			// 200 of its own; 101 switches protocols and leaves the
			// client waiting.
			return st, fmt.Errorf("%d is informational (1xx) and cannot be a final answer: want a status from 200 to 599, or reset", code)
		}
		st.status = code
	}
	seen := map[string]bool{}
	for _, opt := range fields[1:] {
		name, val, hasVal := strings.Cut(opt, "=")
		if seen[name] {
			return st, fmt.Errorf("%s given twice: want each option at most once", name)
		}
		seen[name] = true
		switch name {
		case "retry-after":
			if st.reset {
				return st, fmt.Errorf("reset sends no answer, so no Retry-After: want reset or reset:slow=DURATION")
			}
			n, date, err := parseRetryAfter(val)
			if err != nil {
				return st, fmt.Errorf("retry-after=%s: %v", val, err)
			}
			st.retryAfter, st.dateAfter = n, date
		case "slow":
			d, err := flags.ParseSeconds(val)
			if err != nil {
				return st, fmt.Errorf("slow=%s: %v", val, err)
			}
			st.slow = d
		case "cut":
			switch {
			case hasVal:
				return st, fmt.Errorf("cut=%s: cut takes no value: it sends half of the body announced, then closes the connection", val)
			case st.reset:
				return st, fmt.Errorf("reset sends no answer, so nothing to cut: want reset or a status with cut")
			}
			st.cut = true
		default:
			return st, fmt.Errorf("unknown option %q: want retry-after=SECONDS, retry-after=date+SECONDS, slow=DURATION or cut", opt)
		}
	}
	return st, nil
}

// maxDateAfter is the largest N of a Retry-After date N seconds ahead: the
// most seconds a time.Duration holds, less the second that rounding up to
// whole seconds may add.
const maxDateAfter = (math.MaxInt64 - int64(time.Second) + 1) / int64(time.Second)

// parseRetryAfter reads a Retry-After option's value: whole seconds ("2"),
// or "date+N" for an HTTP date N seconds ahead.
func parseRetryAfter(val string) (n int, date bool, err error) {
	s, date := strings.CutPrefix(val, "date+")
	n, err = strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("want whole seconds ≥ 0 (2) or an HTTP date that many seconds ahead (date+2)")
	}
	if date && int64(n) > maxDateAfter {
		return 0, false, fmt.Errorf("want at most date+%d (an HTTP date about 292 years ahead)", maxDateAfter)
	}
	return n, date, nil
}

// rates is the random mode: each request draws its fate.
type rates struct {
	reset, tooMany, server, slow float64
	status5xx                    int
	retryAfter                   int // for 429s; -1: none
	dateAfter                    bool
	slowFor                      time.Duration
	rng                          *rand.Rand // guarded by the server's lock
}

func (r *rates) draw() step {
	st := step{status: http.StatusOK, retryAfter: -1}
	u := r.rng.Float64()
	switch {
	case u < r.reset:
		st.status, st.reset = 0, true
	case u < r.reset+r.tooMany:
		st.status, st.retryAfter, st.dateAfter = http.StatusTooManyRequests, r.retryAfter, r.dateAfter
	case u < r.reset+r.tooMany+r.server:
		st.status = r.status5xx
	}
	if r.slow > 0 && r.rng.Float64() < r.slow {
		st.slow = r.slowFor
	}
	return st
}
