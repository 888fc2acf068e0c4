package otel_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/idempotency"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// TestIdempotencyAndClient puts one Observer on both sides of a keyed POST:
// httpretry on the client, the idempotency middleware on a loopback
// server. The server first answers 503 (not stored: the retry runs the
// handler again), then 201; a later retry with the key is replayed, the key
// reused for another body is a conflict, and a POST without a key is
// refused.
func TestIdempotencyAndClient(t *testing.T) {
	o, collect := newObserver(t)
	var runs atomic.Int32
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charge":"ch_1"}`)
	})
	idem, err := idempotency.New(idempotency.Config{Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(idem.Require(charge))
	defer srv.Close()

	p, _ := retrytest.NoWait(retry.Policy{})
	client := (&httpretry.Transport{Base: srv.Client().Transport, Policy: p, Observer: o}).Client()
	defer client.CloseIdleConnections()
	post := func(key, body string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, c := range []struct {
		key, body string
		want      int
	}{
		{"k1", "{}", 201},  // 503 (not stored), retried: 201
		{"k1", "{}", 201},  // replayed
		{"k1", "{ }", 422}, // the key reused for another request
	} {
		if got := post(c.key, c.body); got != c.want {
			t.Fatalf("request %d: %d, want %d", i+1, got, c.want)
		}
	}
	if got := post("", "{}"); got != http.StatusBadRequest {
		t.Fatalf("POST without key: %d, want 400", got)
	}
	if runs.Load() != 2 {
		t.Fatalf("the handler ran %d times, want 2", runs.Load())
	}

	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	cl := "http.request.method=POST,yaoki.component=httpretry,server.address=127.0.0.1,server.port=" + port
	s := collect()
	s.expect(t, yotel.MetricAttempts, map[string]float64{
		cl + ",error.type=503,http.response.status_code=503,yaoki.outcome=throttled,yaoki.status_class=5xx": 1,
		cl + ",http.response.status_code=201,yaoki.outcome=success,yaoki.status_class=2xx":                  2,
		cl + ",error.type=422,http.response.status_code=422,yaoki.outcome=success,yaoki.status_class=4xx":   1,
		cl + ",error.type=400,http.response.status_code=400,yaoki.outcome=success,yaoki.status_class=4xx":   1,
	})
	s.expect(t, yotel.MetricRetries, map[string]float64{
		cl + ",error.type=503,http.response.status_code=503,yaoki.status_class=5xx,yaoki.wait.source=backoff": 1,
	})
	s.expect(t, yotel.MetricReplays, map[string]float64{
		"http.request.method=POST,http.response.status_code=201,yaoki.component=idempotency,yaoki.status_class=2xx": 1,
	})
	s.expect(t, yotel.MetricConflicts, map[string]float64{
		"http.request.method=POST,http.response.status_code=422,yaoki.component=idempotency,yaoki.reason=key_reused,yaoki.status_class=4xx":  1,
		"http.request.method=POST,http.response.status_code=400,yaoki.component=idempotency,yaoki.reason=key_missing,yaoki.status_class=4xx": 1,
	})
}
