package deadletter_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yaoki-go/yaoki/deadletter"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

func TestCaptureFromGiveUp(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t)
	p, _ := retrytest.NoWait(retry.Policy{})
	err := retry.Do(ctx, p, func(context.Context) error { return errors.New("partner: 503") })
	l, perr := deadletter.Capture(ctx, m, deadletter.Letter{Queue: "payments", Key: "order-42", Payload: []byte(`{"amount":1000}`)}, err, t0)
	if perr != nil {
		t.Fatal(perr)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(l.ID) {
		t.Fatalf("ID %q, want 32 hex digits", l.ID)
	}
	got := get(t, m, l.ID)
	if got.Reason != "attempts exhausted" || got.Attempts != 3 || !strings.Contains(got.Error, "partner: 503") ||
		!got.Created.Equal(t0) || !got.Due.Equal(t0) || got.Key != "order-42" {
		t.Fatalf("captured %+v", got)
	}
}

func TestCaptureKeepsWhatIsSet(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t)
	due := t0.Add(10 * 60e9)
	l, err := deadletter.Capture(ctx, m, deadletter.Letter{ID: "mine", Queue: "q", Due: due, Reason: "shutdown"}, errors.New("x"), t0)
	if err != nil || l.ID != "mine" || !get(t, m, "mine").Due.Equal(due) || l.Reason != "shutdown" || l.Attempts != 1 {
		t.Fatalf("%+v %v", l, err)
	}
}

func TestCaptureRefusesAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	if _, err := deadletter.Capture(ctx, newMemory(t), deadletter.Letter{Queue: "q"}, nil, t0); !errors.Is(err, deadletter.ErrInvalidLetter) {
		t.Fatalf("Capture of a nil error: %v, want ErrInvalidLetter", err)
	}
	full, _ := deadletter.NewMemory(1)
	if _, err := deadletter.Capture(ctx, full, deadletter.Letter{Queue: "q"}, errors.New("x"), t0); err != nil {
		t.Fatal(err)
	}
	l, err := deadletter.Capture(ctx, full, deadletter.Letter{Queue: "q", Payload: []byte("the work")}, errors.New("x"), t0)
	if !errors.Is(err, deadletter.ErrFull) || string(l.Payload) != "the work" || l.ID == "" {
		t.Fatalf("Capture into a full store: %+v %v, want ErrFull and the letter back", l, err)
	}
}

func TestCaptureCutsLongErrors(t *testing.T) {
	long := strings.Repeat("é", deadletter.MaxErrorBytes) // 2 bytes each
	l, err := deadletter.Capture(context.Background(), newMemory(t), deadletter.Letter{Queue: "q"}, errors.New(long), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Error) > deadletter.MaxErrorBytes || !utf8.ValidString(l.Error) || len(l.Error) < deadletter.MaxErrorBytes-1 {
		t.Fatalf("error of %d bytes (valid UTF-8: %v), want at most %d, cut on a rune boundary", len(l.Error), utf8.ValidString(l.Error), deadletter.MaxErrorBytes)
	}
}

func TestCaptureMakesErrorsText(t *testing.T) {
	l, err := deadletter.Capture(context.Background(), newMemory(t), deadletter.Letter{Queue: "q"}, errors.New("bad \xff byte and \x00 NUL"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Error != "bad \uFFFD byte and \uFFFD NUL" {
		t.Fatalf("error %q, want the bad byte and the NUL replaced by U+FFFD", l.Error)
	}
}

// TestCaptureCountsStopAtMaxCount: an error that counts more attempts than
// a store keeps is captured with Attempts MaxCount, not refused.
func TestCaptureCountsStopAtMaxCount(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t)
	err := &retry.Error{Attempts: 1 << 40, Reason: retry.ReasonExhausted, Last: errors.New("partner: 503")}
	l, perr := deadletter.Capture(ctx, m, deadletter.Letter{Queue: "q"}, err, t0)
	if perr != nil || get(t, m, l.ID).Attempts != deadletter.MaxCount {
		t.Fatalf("Capture of %d attempts: %+v, %v: want it stored with Attempts %d", 1<<40, l, perr, deadletter.MaxCount)
	}
}
