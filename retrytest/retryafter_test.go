package retrytest_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yaoki-go/yaoki/retrytest"
)

// The date forms of a scripted Retry-After are the three HTTP-date forms
// of RFC 9110 §5.6.7, each in GMT as the grammar requires (a recipient
// stricter than net/http rejects "UTC").
func TestRetryAfterDateForms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := retrytest.NewRoundTripper(t, "503:retry-after=date+3s,503:retry-after=rfc850+3s,503:retry-after=asctime+3s,503:retry-after=date-2s")
		at := time.Now().Add(3 * time.Second).UTC()
		want := []string{
			at.Format("Mon, 02 Jan 2006 15:04:05 GMT"),
			at.Format("Monday, 02-Jan-06 15:04:05 GMT"),
			at.Format("Mon Jan _2 15:04:05 2006"),
			time.Now().Add(-2 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"),
		}
		for i, w := range want {
			req, _ := http.NewRequest("GET", "http://api.test/", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("Retry-After")
			if got != w {
				t.Errorf("step %d: Retry-After %q, want %q", i+1, got, w)
			}
			if _, err := http.ParseTime(got); err != nil {
				t.Errorf("step %d: Retry-After %q is not an HTTP-date: %v", i+1, got, err)
			}
			if i < 2 && !strings.HasSuffix(got, " GMT") {
				t.Errorf("step %d: Retry-After %q does not end in GMT", i+1, got)
			}
		}
	})
}
