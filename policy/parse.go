package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
)

// MaxDocumentSize is the largest document, in bytes, that Parse, Load and
// ReadFile take: a policy is a few kilobytes at most, and a larger file
// is not one (or is an attempt to exhaust the memory of the process).
const MaxDocumentSize = 1 << 20

// Load reads the policy document in the file at path; see Parse. Error
// positions name the file.
func Load(path string) (*Document, error) {
	data, err := ReadFile(path)
	var tooBig *Error
	if errors.As(err, &tooBig) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("policy: cannot read the policy file: %w", err)
	}
	return ParseFile(path, data)
}

// ReadFile returns the content of the policy file at path. It reads at
// most MaxDocumentSize bytes, and refuses a larger file with a *Error
// naming it; the error of a file it cannot read is the os package's
// (*fs.PathError), for the caller to put in its own words.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(name string) *Error {
	return &Error{File: name, Msg: fmt.Sprintf("the document is larger than %d bytes (1 MiB): a policy is a few kilobytes at most; is this the right file?", MaxDocumentSize)}
}

// Parse reads a policy document: a JSON object with Retry (and Catch and
// the fields listed in the package comment), a bare Retry array, or the
// fragment `"Retry": [...]`. It checks every field and returns every error
// it finds, each a *Error with its line, column and JSON path, joined with
// errors.Join: the first 100, and after them one that says how many more
// there are. The returned Document is valid. A document larger than
// MaxDocumentSize is refused.
func Parse(data []byte) (*Document, error) { return ParseFile("", data) }

// ParseFile is Parse with a file name for the error positions.
//
// A UTF-8 byte order mark at the start of data is skipped (RFC 8259 §8.1
// allows a parser to ignore it): columns count from the character after
// it, as editors show them, and offsets count it.
func ParseFile(name string, data []byte) (*Document, error) {
	if len(data) > MaxDocumentSize {
		return nil, tooLarge(name)
	}
	var bom int64
	if rest, ok := bytes.CutPrefix(data, []byte("\xef\xbb\xbf")); ok {
		data, bom = rest, 3
	}
	src := &source{name: name, data: data, bom: bom}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &Error{File: name, Msg: `the document is empty: write a JSON object such as {"Retry": [{"ErrorEquals": ["States.ALL"]}]}`}
	}
	if trimmed[0] == '"' { // the fragment "Retry": [...] as the docs print it
		body := bytes.TrimRight(data, " \t\r\n")
		body = bytes.TrimSuffix(body, []byte(",")) // the docs' fragments end with the comma before the next field
		wrapped := make([]byte, 0, len(body)+2)
		wrapped = append(append(append(wrapped, '{'), body...), '}')
		src = &source{name: name, data: wrapped, shift: 1, bom: bom}
	}
	root, err := parseTree(src.data, src)
	if err != nil {
		return nil, err
	}
	d := &decoder{src: src, errs: errs{file: name}}
	doc := d.document(root)
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return doc, nil
}

// Fields a document may hold; the Step Functions task fields that have no
// meaning here are accepted and ignored.
var (
	docFields = []string{"Retry", "Catch", "TimeoutSeconds", "DeadlineSeconds", "MaxTotalAttempts",
		"MaxRetryAfterSeconds", "RetryMode", "IdempotencyKey", "Budget", "Breaker", "Comment"}
	ignoredFields = []string{"Type", "Resource", "Next", "End", "Parameters", "Arguments", "ResultPath",
		"ResultSelector", "InputPath", "OutputPath", "Output", "Assign", "QueryLanguage", "Credentials",
		"HeartbeatSeconds", "HeartbeatSecondsPath", "TimeoutSecondsPath"}
	retrierFields = []string{"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
		"MaxDelaySeconds", "JitterStrategy", "Comment"}
	catcherFields = []string{"ErrorEquals", "Next", "ResultPath", "Comment", "Output", "Assign"}
	jitterNames   = []string{"FULL", "NONE", "EQUAL", "DECORRELATED"}
)

type decoder struct {
	src  *source
	errs errs
}

func (d *decoder) fail(off int64, path, msg string) {
	if d.errs.full() {
		d.errs.add(nil) // counted, not built
		return
	}
	d.errs.add(d.src.errAt(off, path, msg))
}

func (d *decoder) document(n *node) *Document {
	doc := &Document{}
	switch n.kind {
	case 'a':
		doc.Retry = d.retriers(n, "Retry")
		return doc
	case 'o':
	default:
		d.fail(n.off, "", "the document is "+n.kindName()+`: want a JSON object such as {"Retry": [...]} or a Retry array`)
		return doc
	}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "Retry":
			doc.Retry = d.retriers(v, "Retry")
		case "Catch":
			doc.Catch = d.catchers(v, "Catch")
		case "TimeoutSeconds":
			doc.AttemptTimeout = d.seconds(v, k, checkTimeout)
		case "DeadlineSeconds":
			doc.Deadline = d.seconds(v, k, checkDeadline)
		case "MaxRetryAfterSeconds":
			doc.MaxRetryAfter = d.seconds(v, k, checkMaxRetryAfter)
		case "MaxTotalAttempts":
			doc.MaxTotalAttempts = d.integer(v, k, checkTotalAttempts)
		case "RetryMode":
			if s, ok := d.str(v, k, `want "standard", "adaptive" or "off"`); ok {
				m, ok := ParseMode(s)
				if !ok {
					d.fail(v.off, k, v.raw()+` is not a retry mode: want "standard", "adaptive" or "off"`)
				}
				doc.Mode = m
			}
		case "IdempotencyKey":
			if s, ok := d.str(v, k, `want "auto" or "off"`); ok {
				if msg := checkKeyMode(s); msg != "" {
					d.fail(v.off, k, v.raw()+msg)
				}
				doc.IdempotencyKey = s
			}
		case "Budget":
			doc.Budget = d.budgetConfig(v, k)
		case "Breaker":
			doc.Breaker = d.breakerConfig(v, k)
		case "Comment":
			doc.Comment, _ = d.str(v, k, "want a string")
		default:
			if !contains(ignoredFields, k) {
				d.unknown(n.koff[i], "", k, docFields, "document")
			}
		}
	}
	return doc
}

func (d *decoder) unknown(off int64, path, key string, known []string, what string) {
	if d.errs.full() {
		d.fail(off, path, "") // counted: its message is not built either
		return
	}
	msg := "unknown field " + quote(key)
	if s := suggest(key, known); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	}
	msg += fmt.Sprintf(" (%s fields: %s)", what, strings.Join(known, ", "))
	d.fail(off, path, msg)
}

// fields calls field with each field of n, an object at path, that is one
// of known: its name, value and path. Other fields are reported as unknown
// (what names the object: "retrier", "Budget") and skipped. It returns
// false when field returned false for any field (a value refused), after
// going through them all, so that every error of the object is reported.
func (d *decoder) fields(n *node, path, what string, known []string, field func(k string, v *node, fp string) bool) bool {
	ok := true
	for i, k := range n.keys {
		if !slices.Contains(known, k) {
			d.unknown(n.koff[i], path, k, known, what)
			continue
		}
		if !field(k, n.vals[i], path+"."+k) {
			ok = false
		}
	}
	return ok
}

// objects decodes n, an array of objects, with each: it calls each with
// every element, its index and its path, and returns what each returned, in
// order (an empty array gives an empty, non-nil slice). What is not an
// array, or not an object, fails with wantArray or wantObject; objects
// returns nil when n is not an array.
func objects[T any](d *decoder, n *node, path, wantArray, wantObject string, each func(i int, e *node, p string) T) []T {
	if n.kind != 'a' {
		d.fail(n.off, path, n.found()+": "+wantArray)
		return nil
	}
	out := make([]T, 0, len(n.elems))
	for i, e := range n.elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		if e.kind != 'o' {
			d.fail(e.off, p, e.found()+": "+wantObject)
			continue
		}
		out = append(out, each(i, e, p))
	}
	return out
}

func (d *decoder) retriers(n *node, path string) []Retrier {
	return objects(d, n, path, "want an array of retriers such as [{\"ErrorEquals\": [\"States.ALL\"]}]", "want a retrier object with ErrorEquals", func(i int, e *node, p string) Retrier {
		r := Retrier{Interval: DefaultInterval, MaxAttempts: DefaultMaxAttempts, BackoffRate: DefaultBackoffRate, Jitter: backoff.None}
		seen := false
		var rate *node // BackoffRate as written, if it is
		d.fields(e, p, "retrier", retrierFields, func(k string, v *node, fp string) bool {
			switch k {
			case "ErrorEquals":
				seen = true
				r.ErrorEquals = d.names(v, fp, i == len(n.elems)-1, "retrier")
			case "IntervalSeconds":
				r.Interval = d.seconds(v, fp, checkInterval)
			case "MaxAttempts":
				r.MaxAttempts = d.integer(v, fp, checkMaxAttempts)
			case "BackoffRate":
				rate = v
				if f, ok := d.number(v, fp, "want a number ≥ 1.0 (default 2.0)"); ok {
					if msg := checkBackoffRate(f); msg != "" {
						d.fail(v.off, fp, v.raw()+msg)
					} else {
						r.BackoffRate = f
					}
				}
			case "MaxDelaySeconds":
				r.MaxDelay = d.seconds(v, fp, checkMaxDelay)
			case "JitterStrategy":
				if s, ok := d.str(v, fp, "want one of "+strings.Join(jitterNames, ", ")); ok {
					j, msg := parseJitter(s)
					if msg != "" {
						d.fail(v.off, fp, v.raw()+msg)
					}
					r.Jitter = j
				}
			case "Comment":
				r.Comment, _ = d.str(v, fp, "want a string")
			}
			return true
		})
		if !seen {
			d.fail(e.off, p, "ErrorEquals is missing: each retrier lists the errors it retries, e.g. \"ErrorEquals\": [\"States.ALL\"]")
		}
		if rate != nil && r.Jitter == backoff.Decorrelated {
			d.fail(rate.off, p+".BackoffRate", rate.raw()+` has no effect with "JitterStrategy": "DECORRELATED", which draws each wait from IntervalSeconds up to 3 times the previous one: leave BackoffRate out, or use FULL jitter`)
		}
		return r
	})
}

func (d *decoder) catchers(n *node, path string) []Catcher {
	return objects(d, n, path, "want an array of catchers such as [{\"ErrorEquals\": [\"States.ALL\"], \"Next\": \"Fallback\"}]", "want a catcher object with ErrorEquals and Next", func(i int, e *node, p string) Catcher {
		var c Catcher
		seenErrs, seenNext := false, false
		d.fields(e, p, "catcher", catcherFields, func(k string, v *node, fp string) bool {
			switch k {
			case "ErrorEquals":
				seenErrs = true
				c.ErrorEquals = d.names(v, fp, i == len(n.elems)-1, "catcher")
			case "Next":
				seenNext = true
				if s, ok := d.str(v, fp, "want the name of the state or handler to go to"); ok {
					if s == "" {
						d.fail(v.off, fp, `"" is empty: want the name of the state or handler to go to`)
					}
					c.Next = s
				}
			case "ResultPath":
				if v.kind == 'z' {
					c.DiscardResult = true // Step Functions: discard the error, keep the input
					break
				}
				c.ResultPath, _ = d.str(v, fp, "want a JSON path such as \"$.error\", or null to discard the error")
			case "Comment":
				c.Comment, _ = d.str(v, fp, "want a string")
			case "Output", "Assign": // accepted, and nothing to do here
			}
			return true
		})
		if !seenErrs {
			d.fail(e.off, p, "ErrorEquals is missing: each catcher lists the errors it catches")
		}
		if !seenNext {
			d.fail(e.off, p, "Next is missing: each catcher names where caught errors go")
		}
		return c
	})
}

// names decodes an ErrorEquals array; last says whether its retrier (or
// catcher) is the last one, where States.ALL may stand.
func (d *decoder) names(n *node, path string, last bool, what string) []string {
	if n.kind != 'a' {
		d.fail(n.off, path, n.found()+`: want an array of error names such as ["HTTP.503", "Net.Timeout"]`)
		return nil
	}
	if len(n.elems) == 0 {
		d.fail(n.off, path, "[] is empty: want at least one error name, such as States.ALL")
		return nil
	}
	out := make([]string, 0, len(n.elems))
	for i, e := range n.elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		if e.kind != 's' {
			d.fail(e.off, p, e.found()+": want an error name in quotes, such as \"HTTP.503\"")
			continue
		}
		if msg := checkName(e.str); msg != "" {
			d.fail(e.off, p, msg)
		}
		if e.str == All {
			if len(n.elems) > 1 {
				d.fail(e.off, p, `"States.ALL" must be alone in its ErrorEquals: it already matches every error`)
			}
			if !last {
				d.fail(e.off, p, fmt.Sprintf(`"States.ALL" must be in the last %s: the %ss after it would never be used`, what, what))
			}
		}
		out = append(out, e.str)
	}
	return out
}

func (d *decoder) number(n *node, path, want string) (float64, bool) {
	if n.kind != 'n' {
		d.fail(n.off, path, n.found()+": "+want)
		return 0, false
	}
	f, err := strconv.ParseFloat(n.num.String(), 64)
	if err != nil || math.IsInf(f, 0) {
		d.fail(n.off, path, n.raw()+" is too large: "+want)
		return 0, false
	}
	if f == 0 && !zeroLiteral(n.num.String()) {
		// 1e-400 parses as 0, which a field reads as "at once", "never"
		// or its default: not what was written.
		d.fail(n.off, path, n.raw()+" is too small to be told from 0: "+want)
		return 0, false
	}
	return f, true
}

// zeroLiteral reports whether the JSON number s is written as zero: no
// digit but 0 before its exponent.
func zeroLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E':
			return true
		case '1' <= c && c <= '9':
			return false
		}
	}
	return true
}

// seconds decodes a number of seconds checked by check.
func (d *decoder) seconds(n *node, path string, check func(float64) (string, string)) time.Duration {
	_, want := check(0)
	f, ok := d.number(n, path, want)
	if !ok {
		return 0
	}
	if msg, _ := check(f); msg != "" {
		d.fail(n.off, path, n.raw()+msg)
		return 0
	}
	if !d.keepsSeconds(n, path, f, want) {
		return 0
	}
	return seconds(f)
}

// maxSeconds is about the longest time.Duration, in seconds: more would
// wrap around to a negative duration.
const maxSeconds = float64(math.MaxInt64/time.Second) - 1

// keepsSeconds reports whether f seconds, read from n, is kept as a
// duration: a value other than 0 that rounds to 0 ns would read as 0
// (none, or the default) and is refused, and so is one too large for a
// time.Duration.
func (d *decoder) keepsSeconds(n *node, path string, f float64, want string) bool {
	if f != 0 && seconds(f) == 0 {
		d.fail(n.off, path, n.raw()+" is less than a nanosecond (1e-9), the smallest duration kept: "+want)
		return false
	}
	if math.Abs(f) > maxSeconds {
		d.fail(n.off, path, n.raw()+" is too large: "+want+" (a duration is at most 292 years)")
		return false
	}
	return true
}

func (d *decoder) integer(n *node, path string, check func(int) (string, string)) int {
	_, want := check(1)
	f, ok := d.number(n, path, want)
	if !ok {
		return 0
	}
	if f != math.Trunc(f) {
		d.fail(n.off, path, n.raw()+" is not an integer: "+want)
		return 0
	}
	if math.Abs(f) > 1e15 { // int(f) would be exact, but check wants an int
		d.fail(n.off, path, n.raw()+" out of range: "+want)
		return 0
	}
	if msg, _ := check(int(f)); msg != "" {
		d.fail(n.off, path, n.raw()+msg)
		return 0
	}
	return int(f)
}

func (d *decoder) str(n *node, path, want string) (string, bool) {
	if n.kind != 's' {
		d.fail(n.off, path, n.found()+": "+want)
		return "", false
	}
	return n.str, true
}

func seconds(f float64) time.Duration { return time.Duration(math.Round(f * float64(time.Second))) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the known name closest to s: the same letters in another
// case, or at most two edits away.
func suggest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, s) {
			return k
		}
		if dist := editDistance(strings.ToLower(s), strings.ToLower(k)); dist < bestD {
			best, bestD = k, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
