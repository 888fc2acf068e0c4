package httpretry

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/header"
)

// RateLimitReset returns how long the rate-limit header fields in h say to
// wait, for a response received at now. Fields are tried in this order, and
// the first one present decides:
//
//   - RateLimit, the IETF draft "RateLimit header fields for HTTP", in its
//     structured-field form (drafts 08 and later): a list of quota policies
//     like `"default";r=0;t=30`. The hint is the largest t (seconds until
//     the quota resets) among the policies whose r (remaining quota) is 0
//     or absent; when every policy still has quota left there is no hint.
//     The dictionary form of draft 07 (`limit=100, remaining=0, reset=30`)
//     is read the same way.
//   - RateLimit-Reset (drafts up to 06), with RateLimit-Remaining.
//   - X-RateLimit-Reset, the common vendor field, with X-RateLimit-Remaining.
//
// For the last two, a remaining count above 0 means no hint. A reset value
// may be a number of seconds to wait or a Unix timestamp, told apart by
// size: below 10⁹ it is seconds to wait (10⁹ s is 31 years, so no real wait
// is that long), from 10⁹ to below 10¹² it is a Unix time in seconds (10⁹
// is September 2001), and from 10¹² on a Unix time in milliseconds. X-
// RateLimit-Reset may have a fractional part ("1700000000.250"). A
// timestamp in the past means now. Values that are malformed or negative
// are ignored (and an sf-integer has at most 15 digits, RFC 8941 §3.3.1).
// A well-formed reset is returned however far ahead, as ParseRetryAfter
// returns a wait: one further than a time.Duration holds (about 292 years)
// as the longest Duration, math.MaxInt64.
//
// Retry-After takes precedence over all of these (the draft says so); the
// Transport reads them only when Retry-After is absent or invalid; on 429
// and 503 answers as said here, and on another status it retries only
// where a remaining count says 0 in so many words (r=0, remaining=0,
// RateLimit-Remaining or X-RateLimit-Remaining: 0), as GitHub's 403 for a
// spent quota does: otherwise the quota is not why the request failed.
func RateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	return rateLimitReset(h, now, false)
}

// rateLimitReset is RateLimitReset. With spent, a reset is a hint only
// where a remaining count says, in so many words, that the quota is used
// up (r=0, remaining=0, a RateLimit-Remaining or X-RateLimit-Remaining of
// 0): what the Transport reads on a retried status other than 429 and 503,
// where the fields alone do not say that the quota is why the request
// failed.
func rateLimitReset(h http.Header, now time.Time, spent bool) (time.Duration, bool) {
	if v := h.Values(header.RateLimit); len(v) > 0 {
		return parseRateLimit(v, spent)
	}
	if v := h.Get(header.RateLimitReset); v != "" {
		if !quotaSpent(h.Get(header.RateLimitRemaining), spent) {
			return 0, false
		}
		return parseReset(v, now, false)
	}
	if v := h.Get(header.XRateLimitReset); v != "" {
		if !quotaSpent(h.Get(header.XRateLimitRemaining), spent) {
			return 0, false
		}
		return parseReset(v, now, true)
	}
	return 0, false
}

// quotaSpent reports whether a remaining-quota field v lets its reset be
// a hint: v is not a positive integer (quota left), and, with explicit, v
// is 0.
func quotaSpent(v string, explicit bool) bool {
	v = strings.TrimSpace(v)
	if !isDigits(v) {
		return !explicit
	}
	return strings.TrimLeft(v, "0") == ""
}

// parseReset reads a reset value: seconds to wait, or a Unix time (seconds
// or milliseconds) when large; see RateLimitReset for the rule. A fractional
// part is accepted when fraction is true.
func parseReset(v string, now time.Time, fraction bool) (time.Duration, bool) {
	whole, frac, hasFrac := strings.Cut(strings.TrimSpace(v), ".")
	if !isDigits(whole) || hasFrac && (!fraction || !isDigits(frac)) {
		return 0, false
	}
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > 18 { // a Unix time in milliseconds more than 30 million years ahead
		return maxWait, true
	}
	n := int64(0)
	if whole != "" {
		n, _ = strconv.ParseInt(whole, 10, 64) // digits only, at most 18: no error
	}
	var f float64 // the fraction, in [0, 1)
	if hasFrac {
		if len(frac) > 9 {
			frac = frac[:9] // nanoseconds are enough
		}
		f, _ = strconv.ParseFloat("0."+frac, 64)
	}
	switch {
	case n < 1e9: // seconds to wait
		return time.Duration(n)*time.Second + time.Duration(f*float64(time.Second)), true
	case n < 1e12: // Unix time, seconds
		return until(time.Unix(n, int64(f*1e9)), now)
	default: // Unix time, milliseconds
		return until(time.UnixMilli(n).Add(time.Duration(f*float64(time.Millisecond))), now)
	}
}

// parseRateLimit reads the RateLimit field of the IETF draft (its lines
// joined by commas, as RFC 9110 allows): a structured-field list of
// policies with parameters r and t (drafts 08+), or the dictionary of
// draft 07 (limit, remaining, reset). See RateLimitReset for the rule.
func parseRateLimit(lines []string, spent bool) (time.Duration, bool) {
	p := sfParser{s: strings.Join(lines, ",")}
	var (
		best    = time.Duration(-1)
		dict    bool
		reset   = int64(-1)
		left    int64 // the dictionary's remaining
		hasLeft bool
	)
	for first := true; ; first = false {
		p.ows()
		if p.done() {
			if !first {
				return 0, false // a trailing comma (RFC 8941 §4.2.1: fail parsing)
			}
			break
		}
		var m member
		if !p.member(&m) {
			return 0, false
		}
		if m.key != "" { // dictionary member (draft 07)
			dict = true
			switch m.key {
			case "reset":
				if !m.hasVal || m.val < 0 {
					return 0, false
				}
				reset = m.val
			case "remaining":
				if m.hasVal {
					left, hasLeft = m.val, true
				}
			}
		} else if m.hasT && m.t >= 0 && (m.hasR && m.r <= 0 || !m.hasR && !spent) {
			if d := secs(m.t); d > best {
				best = d
			}
		}
		p.ows()
		if p.done() {
			break
		}
		if !p.eat(',') {
			return 0, false
		}
	}
	if dict {
		if reset < 0 || left > 0 || spent && !hasLeft {
			return 0, false
		}
		best = secs(reset)
	}
	if best < 0 {
		return 0, false
	}
	return best, true
}

// member is one member of a structured-field list or dictionary, reduced
// to what the RateLimit field needs.
type member struct {
	key    string // dictionary key; "" for a list member
	val    int64  // the dictionary member's integer value
	hasVal bool
	r, t   int64 // the list member's r and t parameters
	hasR   bool
	hasT   bool
}

// sfParser parses the subset of RFC 8941 structured fields that the
// RateLimit field uses: bare items (integers, decimals, strings, tokens,
// booleans, byte sequences) with parameters, as list or dictionary members.
// Inner lists are rejected.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) ows() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// member parses a list member (bare item and parameters) or a dictionary
// member (key, optional "=" bare item, parameters).
func (p *sfParser) member(m *member) bool {
	if isKeyStart(p.peek()) {
		start := p.i
		key := p.key()
		if p.eat('=') {
			m.key = key
			v, isInt, ok := p.bareItem()
			if !ok {
				return false
			}
			m.val, m.hasVal = v, isInt
			return p.params(nil)
		}
		// Not a dictionary member: a policy name written as a token.
		p.i = start
	}
	if _, _, ok := p.bareItem(); !ok {
		return false
	}
	return p.params(m)
}

// params parses ";key[=value]" parameters, recording r and t in m.
func (p *sfParser) params(m *member) bool {
	for p.eat(';') {
		for p.peek() == ' ' {
			p.i++
		}
		if !isKeyStart(p.peek()) {
			return false
		}
		k := p.key()
		v, isInt, hasVal := int64(0), false, false
		if p.eat('=') {
			var ok bool
			if v, isInt, ok = p.bareItem(); !ok {
				return false
			}
			hasVal = true
		}
		if m == nil || !hasVal || !isInt {
			continue
		}
		switch k {
		case "r":
			m.r, m.hasR = v, true
		case "t":
			m.t, m.hasT = v, true
		}
	}
	return true
}

func isKeyStart(c byte) bool { return c >= 'a' && c <= 'z' || c == '*' }

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*'
}

func (p *sfParser) key() string {
	start := p.i
	for !p.done() && isKeyChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// bareItem parses one bare item and returns its value when it is an
// integer.
func (p *sfParser) bareItem() (v int64, isInt, ok bool) {
	c := p.peek()
	switch {
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == '"':
		p.i++
		for !p.done() {
			switch p.s[p.i] {
			case '\\':
				p.i++
				if p.peek() != '"' && p.peek() != '\\' {
					return 0, false, false
				}
				p.i++
			case '"':
				p.i++
				return 0, false, true
			default:
				if p.s[p.i] < 0x20 || p.s[p.i] > 0x7e {
					return 0, false, false
				}
				p.i++
			}
		}
		return 0, false, false // unterminated
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		p.i++
		for !p.done() && isTokenChar(p.s[p.i]) {
			p.i++
		}
		return 0, false, true
	case c == ':': // byte sequence
		p.i++
		end := strings.IndexByte(p.s[p.i:], ':')
		if end < 0 {
			return 0, false, false
		}
		p.i += end + 1
		return 0, false, true
	case c == '?': // boolean
		p.i++
		if c := p.peek(); c != '0' && c != '1' {
			return 0, false, false
		}
		p.i++
		return 0, false, true
	}
	return 0, false, false
}

// number parses an sf-integer (up to 15 digits) or an sf-decimal.
func (p *sfParser) number() (int64, bool, bool) {
	start := p.i
	p.eat('-')
	digits := p.i
	for !p.done() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || n > 15 {
		return 0, false, false
	}
	if p.eat('.') { // decimal: up to 12 integer and 3 fraction digits
		fd := p.i
		for !p.done() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if n > 12 || p.i == fd || p.i-fd > 3 {
			return 0, false, false
		}
		return 0, false, true
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	return v, err == nil, err == nil
}

func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
