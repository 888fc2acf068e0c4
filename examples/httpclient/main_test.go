package main

import (
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestHTTPClient runs the program against its real loopback servers with
// a policy whose waits end at once: the GET is answered 429, 503, then
// 200, the server's Retry-After: 1 is the first wait, and the POST is sent
// once without an Idempotency-Key and twice, with one key, with it.
func TestHTTPClient(t *testing.T) {
	p, waits := retrytest.NoWait(retry.Policy{})
	var out strings.Builder
	if err := run(&out, p); err != nil {
		t.Fatalf("run: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"→ 429 Too Many Requests (throttled)",
		"(from the server's Retry-After, plus jitter)",
		"→ 503 Service Unavailable (throttled)",
		"(from the backoff schedule)",
		`got 200 OK "hello"`,
		"Attempt-Count: 3  → 200:body=hello",
		"POST with IdempotencyKey off: 503 Service Unavailable after 1 attempt(s)",
		"Idempotency-Key: (none)",
		"POST with IdempotencyKey auto: 200 OK after 2 attempt(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; got:\n%s", want, got)
		}
	}
	all := waits.All()
	if len(all) != 3 {
		t.Fatalf("got %d waits %v, want 3 (Retry-After, the 503's backoff, the keyed POST's)", len(all), all)
	}
	if all[0] < time.Second || all[0] > 1200*time.Millisecond {
		t.Errorf("first wait %v, want Retry-After: 1 plus up to 20 %%", all[0])
	}
}
