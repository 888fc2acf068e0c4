package policy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/backoff"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
	"github.com/yaoki-go/yaoki/retrytest"
)

// named is an application error with a Step Functions name.
type named string

func (n named) Error() string     { return "task failed: " + string(n) }
func (n named) ErrorName() string { return string(n) }

// status is an HTTP answer as an error.
type status int

func (s status) Error() string   { return fmt.Sprintf("HTTP %d", int(s)) }
func (s status) StatusCode() int { return int(s) }

// run applies doc to a function that fails with errs in turn and then
// succeeds, without waiting; it returns the calls made, the waits asked
// for and the final error.
func run(t *testing.T, doc *policy.Document, errs ...error) (int, []time.Duration, error) {
	t.Helper()
	p, waits := retrytest.NoWait(doc.Policy(policy.Options{Base: retry.Policy{Env: &retry.Env{Rand: func() float64 { return 0.5 }}}}))
	script := retrytest.Script(errs...)
	err := retry.Do(context.Background(), p, script.Func())
	return script.Calls(), waits.All(), err
}

func mustParse(t *testing.T, src string) *policy.Document {
	t.Helper()
	doc, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return doc
}

// The blocks below are written the way the Step Functions documentation
// prints them ("Retry": [...] fragments, with their trailing comma, and
// whole task states).

func TestStepFunctionsTimeoutRetrier(t *testing.T) {
	// The documentation's first example: retry States.Timeout twice,
	// 3 s then 4.5 s.
	doc := mustParse(t, `"Retry": [ {
    "ErrorEquals": [ "States.Timeout" ],
    "IntervalSeconds": 3,
    "MaxAttempts": 2,
    "BackoffRate": 1.5
} ]`)
	r := doc.Retry[0]
	if r.Interval != 3*time.Second || r.MaxAttempts != 2 || r.BackoffRate != 1.5 || r.Jitter != backoff.None || r.MaxDelay != 0 {
		t.Fatalf("got %+v, want IntervalSeconds 3, MaxAttempts 2, BackoffRate 1.5, no jitter, no cap", r)
	}
	timeout := fmt.Errorf("attempt: %w", retry.ErrAttemptTimeout)
	calls, waits, err := run(t, doc, timeout, timeout, timeout)
	if calls != 3 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("got %d calls, err %v; want 3 calls (1 + MaxAttempts 2) then attempts exhausted", calls, err)
	}
	if want := []time.Duration{3 * time.Second, 4500 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	// Any other error matches no retrier: not retried.
	calls, _, err = run(t, doc, named("Other"))
	if calls != 1 || !errors.Is(err, retry.ErrPermanent) {
		t.Fatalf("unmatched error: %d calls, err %v; want 1 call, permanent", calls, err)
	}
}

func TestStepFunctionsComplexRetry(t *testing.T) {
	// The documentation's "complex retry scenario": ErrorA and ErrorB share
	// the first retrier's two retries; ErrorC has its own three, 5 s apart
	// then doubling.
	doc := mustParse(t, `"Retry": [ {
      "ErrorEquals": [ "ErrorA", "ErrorB" ],
      "IntervalSeconds": 1,
      "BackoffRate": 2.0,
      "MaxAttempts": 2
   }, {
      "ErrorEquals": [ "ErrorC" ],
      "IntervalSeconds": 5
   } ],
`)
	a, b, c := named("ErrorA"), named("ErrorB"), named("ErrorC")
	calls, waits, err := run(t, doc, a, c, b, c, c)
	if err != nil || calls != 6 {
		t.Fatalf("A C B C C then success: %d calls, err %v; want 6 calls and success", calls, err)
	}
	want := []time.Duration{1 * time.Second, 5 * time.Second, 2 * time.Second, 10 * time.Second, 20 * time.Second}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v (each retrier counts its own retries)", waits, want)
	}
	// A third error of the first retrier ends the call, even though ErrorC's
	// retrier has retries left.
	calls, _, err = run(t, doc, a, b, a)
	if calls != 3 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("A B A: %d calls, err %v; want 3 calls, exhausted", calls, err)
	}
	if got := doc.Attempts(); got != 1+2+3 {
		t.Fatalf("Attempts() = %d, want 6", got)
	}
}

func TestStepFunctionsLambdaTask(t *testing.T) {
	// A whole task state as the console generates it for Lambda: the
	// fields that have no meaning here load and are ignored.
	doc := mustParse(t, `{
  "Type": "Task",
  "Resource": "arn:aws:states:::lambda:invoke",
  "OutputPath": "$.Payload",
  "Parameters": {
    "Payload.$": "$",
    "FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:charge:$LATEST"
  },
  "Retry": [
    {
      "ErrorEquals": [
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException"
      ],
      "IntervalSeconds": 1,
      "MaxAttempts": 3,
      "BackoffRate": 2,
      "JitterStrategy": "FULL"
    }
  ],
  "Catch": [
    {
      "ErrorEquals": ["States.ALL"],
      "Next": "NotifyFailure",
      "ResultPath": "$.error"
    }
  ],
  "TimeoutSeconds": 60,
  "Next": "Done"
}`)
	if doc.AttemptTimeout != time.Minute {
		t.Fatalf("TimeoutSeconds: got %v, want 1m0s per attempt", doc.AttemptTimeout)
	}
	tooMany := named("Lambda.TooManyRequestsException")
	calls, waits, err := run(t, doc, tooMany, tooMany, tooMany, tooMany)
	if calls != 4 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("%d calls, err %v; want 4 calls, exhausted", calls, err)
	}
	// FULL jitter with the draw 0.5: half of 1 s, 2 s, 4 s.
	if want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	c, ok := doc.Caught(err)
	if !ok || c.Next != "NotifyFailure" || c.ResultPath != "$.error" {
		t.Fatalf("Caught: %+v %v, want the States.ALL catcher to NotifyFailure", c, ok)
	}
}

func TestStepFunctionsMaxAttemptsZeroAndALL(t *testing.T) {
	// MaxAttempts 0 never retries the errors it matches, even though a
	// later States.ALL retrier would; MaxDelaySeconds caps the waits.
	doc := mustParse(t, `{
  "Retry": [ {
    "ErrorEquals": [ "States.Permissions" ],
    "MaxAttempts": 0
  }, {
    "ErrorEquals": [ "States.ALL" ],
    "IntervalSeconds": 2,
    "MaxAttempts": 5,
    "BackoffRate": 3,
    "MaxDelaySeconds": 10
  } ]
}`)
	calls, _, err := run(t, doc, status(403))
	if calls != 1 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("403: %d calls, err %v; want 1 call (MaxAttempts 0)", calls, err)
	}
	e := named("Anything")
	calls, waits, err := run(t, doc, e, e, e, e, e, e)
	if calls != 6 || !errors.Is(err, retry.ErrExhausted) {
		t.Fatalf("%d calls, err %v; want 6 calls", calls, err)
	}
	want := []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v (2·3^(n−1) capped at 10 s)", waits, want)
	}
}

func TestStepFunctionsHTTPTask(t *testing.T) {
	// An HTTP task (arn:aws:states:::http:invoke) with the names yaoki adds:
	// throttling answers get their own, slower retrier.
	doc := mustParse(t, `{
  "Type": "Task",
  "Resource": "arn:aws:states:::http:invoke",
  "Arguments": {"ApiEndpoint": "https://api.example.com/orders", "Method": "GET"},
  "Retry": [
    {"ErrorEquals": ["HTTP.429", "HTTP.503"], "IntervalSeconds": 1, "MaxAttempts": 4, "BackoffRate": 2, "JitterStrategy": "FULL"},
    {"ErrorEquals": ["States.Http.Socket", "HTTP.5XX"], "IntervalSeconds": 0.1, "MaxAttempts": 2, "JitterStrategy": "EQUAL"}
  ],
  "End": true
}`)
	if got := doc.Policy(policy.Options{}).Classify(status(429)); got != retry.ClassThrottled {
		t.Fatalf("429 classified %v, want throttled", got)
	}
	if got := doc.Policy(policy.Options{}).Classify(status(404)); got != retry.ClassPermanent {
		t.Fatalf("404 classified %v, want final (no retrier matches)", got)
	}
	reset := fmt.Errorf("read: %w", errConnReset)
	calls, waits, err := run(t, doc, status(503), reset, status(500), status(429))
	if err != nil || calls != 5 {
		t.Fatalf("%d calls, err %v; want success on the 5th", calls, err)
	}
	// 503: U(0.5)·1 s; reset: EQUAL 75 % of 100 ms; 500: 75 % of 200 ms;
	// 429: the first retrier's second retry, 0.5·2 s.
	want := []time.Duration{500 * time.Millisecond, 75 * time.Millisecond, 150 * time.Millisecond, time.Second}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
}

// "ResultPath": null in a catcher is valid States Language (the AWS CDK
// writes it): the error is discarded and the state's input passes on.
func TestCatcherResultPathNull(t *testing.T) {
	doc, err := policy.Parse([]byte(`{"Retry": [{"ErrorEquals": ["Exit.75"]}], "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Cleanup", "ResultPath": null}]}`))
	if err != nil {
		t.Fatalf("ResultPath null refused: %v", err)
	}
	if c := doc.Catch[0]; !c.DiscardResult || c.ResultPath != "" || c.Next != "Cleanup" {
		t.Errorf("catcher %+v: want DiscardResult, no ResultPath, Next Cleanup", c)
	}
}
