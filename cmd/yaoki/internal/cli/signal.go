package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Signalled is the cause of a context that SignalContext ended: the signal
// that came.
type Signalled struct{ Signal syscall.Signal }

// Error names the signal, as "interrupted by SIGINT".
func (s *Signalled) Error() string { return "interrupted by " + SignalName(s.Signal) }

// ExitCode is 128+N for signal N, the code of a process that signal N
// killed: a shell running the command stops as it would had the signal
// killed it.
func (s *Signalled) ExitCode() int { return 128 + int(s.Signal) }

// SignalName is "SIGINT" for syscall.SIGINT, and so on for the signals a
// user sends; others are "signal N".
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// SignalContext returns a context that ends when the process gets SIGINT or
// SIGTERM, its cause a *Signalled naming the signal (Interrupted reads it),
// and the function that stops watching and ends the context. After the
// first signal the default handling is back: a second Ctrl-C kills the
// process at once, for a user whose command does not stop soon enough.
func SignalContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			n, _ := s.(syscall.Signal)
			cancel(&Signalled{Signal: n})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// Interrupted returns the signal that ended ctx, if SignalContext's watch
// ended it.
func Interrupted(ctx context.Context) (*Signalled, bool) {
	var s *Signalled
	if errors.As(context.Cause(ctx), &s) {
		return s, true
	}
	return nil, false
}
