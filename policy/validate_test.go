package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/policy"
	"github.com/yaoki-go/yaoki/retry"
)

// Every validation error, with the position and path it must name. Each
// row's want strings must all appear in the error.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "  \n", []string{"the document is empty"}},
		{"syntax: trailing comma", "{\"Retry\": [\n  {\"ErrorEquals\": [\"States.ALL\"],}\n]}", []string{"2:", "invalid JSON", "missing comma, a trailing comma"}},
		{"syntax: unclosed", `{"Retry": [`, []string{"1:12", "ends too early"}},
		{"data after the document", `{"Retry": []} {}`, []string{"1:15", "unexpected data after the document"}},
		{"not an object", `42`, []string{"1:1", "the document is a number"}},
		{"duplicate field", `{"Retry": [], "Retry": []}`, []string{"1:15", `field "Retry" appears twice`}},
		{"too deep", strings.Repeat("[", 40) + strings.Repeat("]", 40), []string{"nested more than 32 levels"}},
		{"unknown top-level field", `{"Retyr": []}`, []string{"1:2", `unknown field "Retyr": did you mean "Retry"?`, "document fields: Retry, Catch"}},
		{"Retry not an array", `{"Retry": {}}`, []string{"1:11", "Retry: {…} is an object: want an array of retriers"}},
		{"retrier not an object", `{"Retry": ["States.ALL"]}`, []string{"1:12", "Retry[0]:", "want a retrier object"}},
		{"unknown retrier field", "{\"Retry\": [\n  {\"ErrorEquals\": [\"States.ALL\"], \"MaxAttempt\": 3}\n]}",
			[]string{"2:35", "Retry[0]: unknown field \"MaxAttempt\": did you mean \"MaxAttempts\"?"}},
		{"field in the wrong case", `[{"ErrorEquals": ["States.ALL"], "intervalSeconds": 3}]`, []string{`did you mean "IntervalSeconds"?`}},
		{"ErrorEquals missing", `[{"MaxAttempts": 3}]`, []string{"1:2", "Retry[0]: ErrorEquals is missing"}},
		{"ErrorEquals not an array", `[{"ErrorEquals": "States.ALL"}]`, []string{"1:18", "Retry[0].ErrorEquals: \"States.ALL\" is a string: want an array"}},
		{"ErrorEquals empty", `[{"ErrorEquals": []}]`, []string{"Retry[0].ErrorEquals: [] is empty"}},
		{"name not a string", `[{"ErrorEquals": [503]}]`, []string{"1:19", "Retry[0].ErrorEquals[0]: 503 is a number: want an error name in quotes"}},
		{"empty name", `[{"ErrorEquals": [""]}]`, []string{"Retry[0].ErrorEquals[0]: an error name is empty"}},
		{"bad HTTP name", `[{"ErrorEquals": ["HTTP.5xx"]}]`, []string{`unknown HTTP error name "HTTP.5xx"`, "upper-case XX"}},
		{"HTTP status out of range", `[{"ErrorEquals": ["HTTP.700"]}]`, []string{`unknown HTTP error name "HTTP.700"`, "from 100 to 599"}},
		{"bad Net name", `[{"ErrorEquals": ["Net.Timeut"]}]`, []string{`unknown network error name "Net.Timeut"`, "Net.DNS, Net.Refused, Net.Reset, Net.Timeout"}},
		{"bad States name", `[{"ErrorEquals": ["States.Timeouts"]}]`, []string{`unknown Step Functions error name "States.Timeouts"`}},
		{"States name in the wrong case", `[{"ErrorEquals": ["States.All"]}]`, []string{"did you mean States.ALL?"}},
		{"namespace in the wrong case", `[{"ErrorEquals": ["http.503"]}]`, []string{`"http.503" looks like a built-in name in the wrong case`}},
		{"States.ALL not alone", `[{"ErrorEquals": ["HTTP.503", "States.ALL"]}]`, []string{"1:31", "Retry[0].ErrorEquals[1]", `"States.ALL" must be alone in its ErrorEquals`}},
		{"States.ALL not last", "[\n {\"ErrorEquals\": [\"States.ALL\"]},\n {\"ErrorEquals\": [\"HTTP.503\"]}\n]",
			[]string{"2:19", "Retry[0].ErrorEquals[0]", `"States.ALL" must be in the last retrier`}},
		{"IntervalSeconds negative", `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": -1}]`, []string{"1:53", "Retry[0].IntervalSeconds: -1 out of range: want seconds from 0 to 99999999"}},
		{"IntervalSeconds too large", `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 100000000}]`, []string{"Retry[0].IntervalSeconds: 100000000 out of range"}},
		{"IntervalSeconds a string", `[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": "3"}]`, []string{`Retry[0].IntervalSeconds: "3" is a string: want seconds`}},
		{"MaxAttempts negative", `[{"ErrorEquals": ["States.ALL"], "MaxAttempts": -1}]`, []string{"Retry[0].MaxAttempts: -1 out of range: want an integer from 0 to 99999999"}},
		{"MaxAttempts fraction", `[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2.5}]`, []string{"Retry[0].MaxAttempts: 2.5 is not an integer"}},
		{"MaxAttempts too large", `[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 100000000}]`, []string{"Retry[0].MaxAttempts: 100000000 out of range"}},
		{"MaxAttempts huge", `[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1e400}]`, []string{"Retry[0].MaxAttempts: 1e400 is too large"}},
		{"BackoffRate below 1", "{\"Retry\": [\n  {\"ErrorEquals\": [\"HTTP.503\"]},\n  {\"ErrorEquals\": [\"States.ALL\"], \"BackoffRate\": 0.5}\n]}",
			[]string{"3:50", "Retry[1].BackoffRate: 0.5 out of range: want a number ≥ 1.0 (default 2.0"}},
		{"BackoffRate a bool", `[{"ErrorEquals": ["States.ALL"], "BackoffRate": true}]`, []string{"Retry[0].BackoffRate: true is a boolean"}},
		{"MaxDelaySeconds zero", `[{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 0}]`, []string{"Retry[0].MaxDelaySeconds: 0 out of range: want seconds > 0 and ≤ 31622400"}},
		{"MaxDelaySeconds too large", `[{"ErrorEquals": ["States.ALL"], "MaxDelaySeconds": 31622401}]`, []string{"Retry[0].MaxDelaySeconds: 31622401 out of range"}},
		{"JitterStrategy unknown", `[{"ErrorEquals": ["States.ALL"], "JitterStrategy": "RANDOM"}]`, []string{`Retry[0].JitterStrategy: "RANDOM" is not a jitter strategy: want FULL, NONE, EQUAL, DECORRELATED`}},
		{"JitterStrategy lower-case", `[{"ErrorEquals": ["States.ALL"], "JitterStrategy": "full"}]`, []string{`did you mean "FULL"?`}},
		{"JitterStrategy not a string", `[{"ErrorEquals": ["States.ALL"], "JitterStrategy": null}]`, []string{"Retry[0].JitterStrategy: null: want one of"}},
		{"Comment not a string", `[{"ErrorEquals": ["States.ALL"], "Comment": 1}]`, []string{"Retry[0].Comment: 1 is a number: want a string"}},
		{"Catch not an array", `{"Catch": "x"}`, []string{"Catch: \"x\" is a string: want an array of catchers"}},
		{"catcher not an object", `{"Catch": [1]}`, []string{"Catch[0]: 1 is a number"}},
		{"catcher without Next", `{"Catch": [{"ErrorEquals": ["States.ALL"]}]}`, []string{"Catch[0]: Next is missing"}},
		{"catcher without ErrorEquals", `{"Catch": [{"Next": "F"}]}`, []string{"Catch[0]: ErrorEquals is missing"}},
		{"catcher with empty Next", `{"Catch": [{"ErrorEquals": ["States.ALL"], "Next": ""}]}`, []string{"Catch[0].Next: \"\" is empty"}},
		{"catcher Next not a string", `{"Catch": [{"ErrorEquals": ["States.ALL"], "Next": 3}]}`, []string{"Catch[0].Next: 3 is a number"}},
		{"catcher ResultPath not a string", `{"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F", "ResultPath": 3}]}`, []string{"Catch[0].ResultPath: 3 is a number"}},
		{"Exit. typo", `[{"ErrorEquals": ["Exit.foo"]}]`, []string{`unknown exit error name "Exit.foo": want Exit.<code> with an exit code from 0 to 255`}},
		{"Exit. out of range", `[{"ErrorEquals": ["Exit.256"]}]`, []string{`unknown exit error name "Exit.256"`}},
		{"Exit. with a sign", `[{"ErrorEquals": ["Exit.+1"]}]`, []string{`unknown exit error name "Exit.+1"`}},
		{"exit. lower-case", `[{"ErrorEquals": ["exit.75"]}]`, []string{`"exit.75" looks like a built-in name in the wrong case`}},
		{"unknown catcher field", `{"Catch": [{"ErrorEquals": ["States.ALL"], "Nxt": "F"}]}`, []string{`Catch[0]: unknown field "Nxt": did you mean "Next"?`}},
		{"States.ALL catcher not last", `{"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "A"}, {"ErrorEquals": ["HTTP.503"], "Next": "B"}]}`, []string{"Catch[0].ErrorEquals[0]", "must be in the last catcher"}},
		{"TimeoutSeconds zero", `{"TimeoutSeconds": 0}`, []string{"1:20", "TimeoutSeconds: 0 out of range: want seconds > 0"}},
		{"DeadlineSeconds negative", `{"DeadlineSeconds": -5}`, []string{"DeadlineSeconds: -5 out of range: want seconds > 0"}},
		{"MaxRetryAfterSeconds zero", `{"MaxRetryAfterSeconds": 0}`, []string{"MaxRetryAfterSeconds: 0 out of range: want seconds > 0 and ≤ 99999999 (default 60)"}},
		{"MaxTotalAttempts zero", `{"MaxTotalAttempts": 0}`, []string{"MaxTotalAttempts: 0 out of range: want an integer from 1 to 99999999"}},
		{"MaxTotalAttempts a string", `{"MaxTotalAttempts": "5"}`, []string{`MaxTotalAttempts: "5" is a string`}},
		{"RetryMode unknown", `{"RetryMode": "aggressive"}`, []string{`RetryMode: "aggressive" is not a retry mode: want "standard", "adaptive" or "off"`}},
		{"RetryMode not a string", `{"RetryMode": 1}`, []string{"RetryMode: 1 is a number"}},
		{"IdempotencyKey unknown", `{"IdempotencyKey": "always"}`, []string{`IdempotencyKey: "always" is not an idempotency-key mode: want "auto"`}},
		{"IdempotencyKey not a string", `{"IdempotencyKey": true}`, []string{"IdempotencyKey: true is a boolean"}},
		{"Comment not a string at the top", `{"Comment": []}`, []string{"Comment: […] is an array"}},
		{"Budget not an object", `{"Budget": 3}`, []string{"1:12", "Budget: 3 is a number: want an object"}},
		{"Budget ratio out of range", `{"Budget": {"Ratio": -1}}`, []string{"1:22", "Budget.Ratio: -1 out of range: want 0 < Ratio ≤ 100"}},
		{"Budget window too short", `{"Budget": {"WindowSeconds": 0.001}}`, []string{"1:30", "Budget.WindowSeconds: 0.001 out of range: want 10ms ≤ WindowSeconds ≤ 1h"}},
		{"Budget field unknown", `{"Budget": {"Ratioo": 1}}`, []string{`Budget: unknown field "Ratioo": did you mean "Ratio"?`}},
		{"Budget field a string", `{"Budget": {"MinPerSecond": "10"}}`, []string{`Budget.MinPerSecond: "10" is a string`}},
		{"Breaker not an object", `{"Breaker": []}`, []string{"Breaker: […] is an array: want an object"}},
		{"Breaker ratio out of range", `{"Breaker": {"FailureRatio": 2}}`, []string{"1:30", "Breaker.FailureRatio: 2 out of range: want 0 < FailureRatio ≤ 1"}},
		{"Breaker open time too short", `{"Breaker": {"OpenSeconds": 0.0001}}`, []string{"1:29", "Breaker.OpenSeconds: 0.0001 out of range: want 1ms ≤ OpenSeconds ≤ 24h"}},
		{"Breaker MaxOpenSeconds below OpenSeconds", `{"Breaker": {"OpenSeconds": 60, "MaxOpenSeconds": 30}}`, []string{"1:51", "Breaker.MaxOpenSeconds: 30 out of range: want OpenSeconds (1m0s) ≤ MaxOpenSeconds"}},
		{"Breaker MinCalls fraction", `{"Breaker": {"MinCalls": 1.5}}`, []string{"Breaker.MinCalls: 1.5 is not an integer"}},
		{"Breaker RetriesOnly not a bool", `{"Breaker": {"RetriesOnly": "yes"}}`, []string{`Breaker.RetriesOnly: "yes" is a string: want true or false`}},
		{"Breaker field unknown", `{"Breaker": {"Window": 30}}`, []string{`Breaker: unknown field "Window"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.ParseFile("p.json", []byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse(%s) = nil error, want one", tc.doc)
			}
			if !errors.Is(err, policy.ErrInvalidDocument) {
				t.Errorf("error %v does not match ErrInvalidDocument", err)
			}
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.File != "p.json" {
				t.Errorf("error %v: want a *policy.Error naming p.json", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %v\nwant it to contain\n  %s", err, w)
				}
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	_, err := policy.Parse([]byte(`{"Retry": [{"ErrorEquals": ["States.ALL"], "BackoffRate": 0, "MaxAttempts": -1}], "Oops": 1}`))
	msg := err.Error()
	for _, w := range []string{"Retry[0].BackoffRate", "Retry[0].MaxAttempts", `unknown field "Oops"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not report %s", msg, w)
		}
	}
	if !strings.HasPrefix(msg, "policy: 1:") {
		t.Errorf("error %q: want it to start with the position", msg)
	}
}

func TestValidateGoDocument(t *testing.T) {
	good := &policy.Document{Retry: []policy.Retrier{policy.NewRetrier("HTTP.503"), {ErrorEquals: []string{"States.ALL"}}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	bad := &policy.Document{
		Retry: []policy.Retrier{
			{ErrorEquals: []string{"States.ALL"}, Interval: -time.Second, MaxAttempts: -2, BackoffRate: 0.5, MaxDelay: -1, Jitter: 9},
			{},
		},
		Catch:            []policy.Catcher{{ErrorEquals: []string{"Net.Nope"}}},
		AttemptTimeout:   -1,
		Deadline:         -1,
		MaxRetryAfter:    -1,
		MaxTotalAttempts: -3,
		Mode:             7,
		IdempotencyKey:   "sometimes",
		Budget:           &budget.ShareConfig{Ratio: -1},
		Breaker:          &breaker.Config{FailureRatio: 3},
	}
	err := bad.Validate()
	for _, w := range []string{
		"Retry[0].ErrorEquals[0]: \"States.ALL\" must be in the last retrier",
		"Retry[0].IntervalSeconds: -1 out of range", "Retry[0].MaxAttempts: -2 out of range",
		"Retry[0].BackoffRate: 0.5 out of range", "Retry[0].MaxDelaySeconds", "Retry[0].JitterStrategy",
		"Retry[1].ErrorEquals: ErrorEquals is empty", "Catch[0].ErrorEquals[0]: unknown network error name",
		"Catch[0].Next: Next is empty", "TimeoutSeconds", "DeadlineSeconds", "MaxRetryAfterSeconds",
		"MaxTotalAttempts: -3 out of range", "RetryMode", "IdempotencyKey",
		"Budget: Ratio -1 out of range", "Breaker: FailureRatio 3 out of range",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error %v: want it to contain %q", err, w)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Policy of an invalid document did not panic")
		}
	}()
	bad.Policy(policy.Options{})
}

func TestApplyEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	doc := mustParse(t, `[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 9}]`)
	if err := doc.ApplyEnv(env(map[string]string{"YAOKI_MAX_ATTEMPTS": "4", "YAOKI_RETRY_MODE": "adaptive"})); err != nil {
		t.Fatal(err)
	}
	if doc.Attempts() != 4 || doc.Mode != policy.Adaptive {
		t.Fatalf("after env: %d attempts, mode %v; want 4, adaptive", doc.Attempts(), doc.Mode)
	}
	if err := doc.ApplyEnv(env(map[string]string{"YAOKI_RETRY_MODE": "OFF"})); err != nil || doc.Attempts() != 1 {
		t.Fatalf("off: %d attempts, err %v; want 1", doc.Attempts(), err)
	}
	if err := doc.ApplyEnv(env(map[string]string{"YAOKI_MAX_ATTEMPTS": ""})); err != nil {
		t.Fatalf("empty variable: %v, want no change", err)
	}
	for k, v := range map[string]string{"YAOKI_MAX_ATTEMPTS": "0", "YAOKI_RETRY_MODE": "fast"} {
		err := doc.ApplyEnv(env(map[string]string{k: v}))
		if !errors.Is(err, policy.ErrInvalidDocument) || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "want") {
			t.Errorf("%s=%s: err %v, want an error naming the variable and what is accepted", k, v, err)
		}
	}
}

// Budget, Breaker and RetryMode adaptive give the policy its guards, shared
// by every call of the policy.
func TestGuards(t *testing.T) {
	doc := mustParse(t, `{"Retry": [{"ErrorEquals": ["States.ALL"]}], "RetryMode": "adaptive",
		"Budget": {}, "Breaker": {"ConsecutiveFailures": 2, "OpenSeconds": 60}}`)
	p := doc.Policy(policy.Options{})
	if e := p.Env; e == nil || e.Budget == nil || e.Breaker == nil || e.Throttle == nil {
		t.Fatalf("policy guards: env %+v; want a budget, a breaker and a throttle", e)
	}
	// Two failures in a row open the breaker: the third call is refused
	// before any attempt.
	fail := func(context.Context) error { return errors.New("down") }
	p.MaxAttempts = 1
	for i := 0; i < 2; i++ {
		if err := retry.Do(context.Background(), p, fail); !errors.Is(err, retry.ErrExhausted) {
			t.Fatalf("call %d: %v, want exhausted", i+1, err)
		}
	}
	if err := retry.Do(context.Background(), p, fail); !errors.Is(err, retry.ErrBreakerOpen) {
		t.Fatalf("third call: %v, want the breaker open", err)
	}
	if p2 := mustParse(t, `[]`).Policy(policy.Options{}); p2.Env != nil {
		t.Fatal("a document without guards got some")
	}
}
