package header_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/header"
)

// Every name is canonical, so it can index an http.Header directly.
func TestCanonical(t *testing.T) {
	for _, n := range []string{header.IdempotencyKey, header.XIdempotencyKey, header.IdempotentReplayed,
		header.AttemptCount, header.DoNotRetry, header.RetryAfter, header.RateLimit, header.RateLimitReset,
		header.RateLimitRemaining, header.XRateLimitReset, header.XRateLimitRemaining} {
		if c := http.CanonicalHeaderKey(n); c != n || !header.ValidName(n) {
			t.Errorf("%q: canonical %q, valid %t; want itself and valid", n, c, header.ValidName(n))
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"Attempt-Count": true, "x_y.z~1": true, "!#$%&'*+-.^_`|~": true,
		"": false, "a b": false, "a:b": false, "a/b": false, "é": false, "a\r\n": false, "(x)": false,
	} {
		if got := header.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %t, want %t", name, got, want)
		}
	}
}

// The names index an http.Header as they are; ValidName checks a name a
// user configured.
func Example() {
	h := http.Header{}
	h[header.AttemptCount] = []string{"2"}
	fmt.Println(h.Get("attempt-count"), header.ValidName("Attempt Count"))
	// Output: 2 false
}

// FuzzValidName: ValidName accepts exactly the RFC 9110 tokens (§5.6.2:
// 1*tchar), and any name it accepts is one net/http sends as it is
// (http.CanonicalHeaderKey changes only the case of its letters).
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"Attempt-Count", "", "a b", "a:b", "é", "a\r\nb", "x_y", "\x00", "Retry-After\t"} {
		f.Add(s)
	}
	token := regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
	f.Fuzz(func(t *testing.T, name string) {
		got := header.ValidName(name)
		if want := token.MatchString(name); got != want {
			t.Fatalf("ValidName(%q) = %t, want %t", name, got, want)
		}
		if got && !strings.EqualFold(http.CanonicalHeaderKey(name), name) {
			t.Fatalf("ValidName(%q) but http.CanonicalHeaderKey makes it %q", name, http.CanonicalHeaderKey(name))
		}
	})
}
