package policy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
)

func TestNameAndMatches(t *testing.T) {
	attemptTimeout := fmt.Errorf("retry: attempt timed out: %w", retry.ErrAttemptTimeout)
	for _, tc := range []struct {
		err     error
		name    string
		matches []string
		not     []string
	}{
		{status(503), "HTTP.503", []string{"HTTP.503", "HTTP.5XX", "States.ALL", "States.TaskFailed"}, []string{"HTTP.500", "HTTP.4XX", "States.Timeout", "Net.Reset"}},
		{fmt.Errorf("get: %w", status(403)), "HTTP.403", []string{"States.Permissions", "HTTP.4XX"}, []string{"HTTP.5XX"}},
		{named("HTTP.429"), "HTTP.429", []string{"HTTP.429", "HTTP.4XX"}, []string{"HTTP.503"}},
		{attemptTimeout, "States.Timeout", []string{"States.Timeout", "Net.Timeout", "States.ALL"}, []string{"States.TaskFailed", "Net.Reset"}},
		// A command stopped by the timeout exits with a code of its own.
		{fmt.Errorf("%w: %w", retry.ErrAttemptTimeout, named("Exit.143")), "States.Timeout", []string{"States.Timeout", "States.ALL"}, []string{"Exit.143", "States.TaskFailed"}},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}, "Net.Timeout", []string{"Net.Timeout", "States.Timeout", "States.Http.Socket"}, []string{"States.TaskFailed"}},
		{os.ErrDeadlineExceeded, "Net.Timeout", []string{"Net.Timeout"}, nil},
		{context.DeadlineExceeded, "Net.Timeout", []string{"Net.Timeout"}, nil},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, "Net.Reset", []string{"Net.Reset", "States.Http.Socket", "States.TaskFailed"}, []string{"Net.Refused"}},
		{io.ErrUnexpectedEOF, "Net.Reset", []string{"Net.Reset"}, nil},
		{syscall.EPIPE, "Net.Reset", []string{"Net.Reset"}, nil},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, "Net.Refused", []string{"Net.Refused", "States.Http.Socket"}, []string{"Net.Reset"}},
		{&net.DNSError{Err: "no such host", Name: "x.invalid"}, "Net.DNS", []string{"Net.DNS"}, []string{"Net.Timeout"}},
		{named("Lambda.ServiceException"), "Lambda.ServiceException", []string{"Lambda.ServiceException", "States.ALL", "States.TaskFailed"}, []string{"Lambda.Other"}},
		{named("States.HeartbeatTimeout"), "States.HeartbeatTimeout", []string{"States.HeartbeatTimeout"}, []string{"States.Timeout"}},
		{errors.New("boom"), "States.TaskFailed", []string{"States.TaskFailed", "States.ALL"}, []string{"States.Timeout", "Net.Reset", "States.Runtime"}},
		// Step Functions: States.ALL does not catch these terminal errors;
		// only their own name does.
		{named("States.DataLimitExceeded"), "States.DataLimitExceeded", []string{"States.DataLimitExceeded"}, []string{"States.ALL"}},
		{named("States.Runtime"), "States.Runtime", []string{"States.Runtime"}, []string{"States.ALL"}},
	} {
		if got := policy.Name(tc.err); got != tc.name {
			t.Errorf("Name(%v) = %q, want %q", tc.err, got, tc.name)
		}
		for _, m := range tc.matches {
			if !policy.Matches(m, tc.err) {
				t.Errorf("Matches(%q, %v) = false, want true", m, tc.err)
			}
		}
		for _, m := range tc.not {
			if policy.Matches(m, tc.err) {
				t.Errorf("Matches(%q, %v) = true, want false", m, tc.err)
			}
		}
	}
	if policy.Name(nil) != "" || policy.Matches("States.ALL", nil) {
		t.Error("nil error: want no name and no match")
	}
}

// An attempt that runs into TimeoutSeconds is retried by a States.Timeout
// retrier, through the real retry loop.
func TestAttemptTimeoutIsStatesTimeout(t *testing.T) {
	doc := mustParse(t, `{"Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 0, "MaxAttempts": 1}], "TimeoutSeconds": 0.001}`)
	calls := 0
	err := doc.Do(context.Background(), func(ctx context.Context) error {
		calls++
		<-ctx.Done()
		return ctx.Err()
	})
	if calls != 2 || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, retry.ErrAttemptTimeout) {
		t.Fatalf("%d calls, err %v; want 2 timed-out attempts", calls, err)
	}
}
