package httpretry_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// hostileAnswers are what a server that throttles, badly or on purpose,
// answers: Retry-After in every form (valid, past, far, negative,
// fractional, absurd, twice), the RateLimit fields (spent, left, absurd,
// malformed), and plain failures. want is the least wait the answer asks
// for, when the Transport must honour it (0: none, or one it may refuse).
var hostileAnswers = []struct {
	step string
	want time.Duration
}{
	{"503:retry-after=1", time.Second},
	{"429:retry-after=7", 7 * time.Second},
	{"503:retry-after=60", time.Minute},
	{"429:retry-after=61", 0},
	{"503:retry-after=date+3s", 3 * time.Second},
	{"429:retry-after=rfc850+2s", 2 * time.Second},
	{"503:retry-after=asctime+4s", 4 * time.Second},
	{"429:retry-after=date-1h", 0},
	{"503:retry-after=date+400d", 0},
	{"429:retry-after=-5", 0},
	{"503:retry-after=2.5", 0},
	{"429:retry-after=99999999999999999999", 0},
	{"503:retry-after=2:header=Retry-After=9", 9 * time.Second},
	{`429:header=RateLimit="d";r=0;t=5`, 5 * time.Second},
	{`429:header=RateLimit="d";r=3;t=5`, 0},
	{`503:header=RateLimit="d";r=0;t=99999999999`, 0},
	{`429:header=RateLimit="d;r=0`, 0},
	{"503:header=X-RateLimit-Reset=3", 3 * time.Second},
	{"500:retry-after=2", 2 * time.Second},
	{"500", 0},
	{"reset", 0},
}

// TestHostileHintsKeepTheirWord: a Transport with no attempt limit, under
// a deadline, against a server whose every answer is drawn from
// hostileAnswers (300 seeded runs, virtual time): no run outlasts its
// deadline, every wait the server asked for and the Transport honoured is
// at least what it asked and at most 20 % more, and the call ends with
// the server's last answer or an error that says why.
func TestHostileHintsKeepTheirWord(t *testing.T) {
	var checked, ok200, gaveUp int
	defer func() {
		t.Logf("%d waits checked against their hint; %d runs ended 200, %d with the server's answer or an error before", checked, ok200, gaveUp)
		if checked < 300 || ok200 == 0 || gaveUp == 0 {
			t.Errorf("the runs checked too little: %d waits, %d successes, %d give-ups", checked, ok200, gaveUp)
		}
	}()
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var steps []string
		var want []time.Duration
		for range 12 {
			a := hostileAnswers[r.IntN(len(hostileAnswers))]
			steps, want = append(steps, a.step), append(want, a.want)
		}
		deadline := time.Duration(1+r.IntN(120)) * time.Second
		synctest.Test(t, func(t *testing.T) {
			rt := retrytest.NewRoundTripper(t, strings.Join(steps, ",")+",200")
			tr := &httpretry.Transport{Base: rt, Policy: retry.Policy{MaxAttempts: retry.Unlimited},
				Guards: httpretry.Guards{Budget: httpretry.NoBudget}}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			took := time.Since(start)
			if resp != nil {
				resp.Body.Close()
			}
			if (resp == nil) == (err == nil) {
				t.Fatalf("seed %d: got %v and %v; want exactly one", seed, resp, err)
			}
			if took >= deadline {
				t.Errorf("seed %d: took %v, past the deadline %v", seed, took, deadline)
			}
			as := rt.Attempts()
			for i, g := range gaps(as) {
				w, least := want[i], want[i]
				if strings.Contains(steps[i], "date+") || strings.Contains(steps[i], "850+") || strings.Contains(steps[i], "asctime+") {
					least -= time.Second // an HTTP-date has whole seconds: this one was written at now, truncated
				}
				if w > 0 {
					checked++
				}
				if w > 0 && (g < least || g > w+w/5) {
					t.Errorf("seed %d: %q asked for %v; the next attempt came after %v", seed, steps[i], w, g)
				}
			}
			if resp != nil && resp.StatusCode == 200 {
				ok200++
			} else {
				gaveUp++
			}
			if n := len(as); n < len(steps)+1 && resp != nil && resp.StatusCode == 200 {
				t.Errorf("seed %d: 200 after %d attempts, but only attempt %d answers 200", seed, n, len(steps)+1)
			}
		})
	}
}
