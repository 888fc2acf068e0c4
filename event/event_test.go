package event_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/yaoki-go/yaoki/event"
)

func TestNames(t *testing.T) {
	if event.GaveUp.String() != "gave_up" || event.Kind(200).String() != "kind_200" {
		t.Error("Kind names")
	}
	if event.Throttled.String() != "throttled" || event.Outcome(0).String() != "unknown" {
		t.Error("Outcome names")
	}
	if event.ServerHint.String() != "server" || event.Backoff.String() != "backoff" || event.Source(0).String() != "unknown" {
		t.Error("Source names")
	}
}

func TestMulti(t *testing.T) {
	if event.Multi() != nil || event.Multi(nil, nil) != nil {
		t.Error("Multi of nothing must be nil, so that callers keep the free path")
	}
	var got []string
	a := event.Func(func(_ context.Context, e event.Event) { got = append(got, "a:"+e.Kind.String()) })
	b := event.Func(func(_ context.Context, e event.Event) { got = append(got, "b:"+e.Kind.String()) })
	if o := event.Multi(nil, a); o == nil {
		t.Fatal("Multi(nil, a) = nil")
	}
	event.Multi(a, nil, b).Observe(context.Background(), event.Event{Kind: event.Replay})
	if fmt.Sprint(got) != "[a:replay b:replay]" {
		t.Errorf("got %v", got)
	}
}

func ExampleFunc() {
	var o event.Observer = event.Func(func(ctx context.Context, e event.Event) {
		fmt.Println(e.Kind, e.Attempt, e.Wait, e.Source)
	})
	o.Observe(context.Background(), event.Event{Kind: event.RetryScheduled, Attempt: 1, Wait: 25e6, Source: event.Backoff})
	// Output: retry_scheduled 1 25ms backoff
}
