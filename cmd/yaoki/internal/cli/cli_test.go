package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/yaoki-go/yaoki/retry"
)

type netTimeout struct{}

func (netTimeout) Error() string   { return "i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

func TestIsTimeout(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("attempt 2: %w", retry.ErrAttemptTimeout), true},
		{&url.Error{Op: "Get", URL: "http://h/", Err: os.ErrDeadlineExceeded}, true},
		{&url.Error{Op: "Get", URL: "http://h/", Err: netTimeout{}}, true},
		{context.DeadlineExceeded, true}, // it reports Timeout() true
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := IsTimeout(c.err); got != c.want {
			t.Errorf("IsTimeout(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
