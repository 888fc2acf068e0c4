package idemproc

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/header"
	"github.com/yaoki-go/yaoki/httpretry"
	"github.com/yaoki-go/yaoki/retry"
)

// Reply is what one client of SendAtOnce ended with.
type Reply struct {
	Status   int
	Body     string
	Replayed string // the header.IdempotentReplayed header
	Err      error
}

// SendAtOnce has n clients send the same POST (payload, with the
// Idempotency-Key key and the headers that set adds, when not nil) at the
// same instant, client i to url(i), and returns what each ended with. Each
// client is its own httpretry client that retries 409 (the answer while the
// first request runs) as soon as the server's "Retry-After: 0" allows, for
// up to a minute; they share one transport of n idle connections.
func SendAtOnce(n int, url func(i int) string, key string, payload []byte, set func(http.Header)) []Reply {
	base := &http.Transport{MaxIdleConnsPerHost: n, IdleConnTimeout: time.Minute}
	defer base.CloseIdleConnections()
	replies := make([]Reply, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			client := (&httpretry.Transport{
				Base:     base,
				Statuses: append(httpretry.DefaultStatuses(), http.StatusConflict),
				// No retry budget: the 409s while the first request runs are
				// expected, and the default per-host budget gives up on them.
				Guards: httpretry.Guards{Budget: httpretry.NoBudget},
				Policy: retry.Policy{
					MaxAttempts: retry.Unlimited,
					MaxElapsed:  time.Minute,
					// Tiny: the server says "Retry-After: 0", and when
					// it does not (a transport error) the test should not
					// wait either.
					Backoff: backoff.Schedule{Base: time.Millisecond, Cap: 10 * time.Millisecond},
				},
			}).Client()
			req, err := http.NewRequest(http.MethodPost, url(i), bytes.NewReader(payload))
			if err != nil {
				replies[i].Err = err
				return
			}
			req.Header.Set(header.IdempotencyKey, key)
			if set != nil {
				set(req.Header)
			}
			<-start
			resp, err := client.Do(req)
			if err != nil {
				replies[i].Err = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			replies[i] = Reply{Status: resp.StatusCode, Body: string(b), Replayed: resp.Header.Get(header.IdempotentReplayed), Err: err}
		})
	}
	close(start)
	wg.Wait()
	return replies
}
