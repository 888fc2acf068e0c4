package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// firstErr parses doc and returns its first *policy.Error, failing the
// test when doc is accepted.
func firstErr(t *testing.T, doc string) *policy.Error {
	t.Helper()
	_, err := policy.ParseFile("p.json", []byte(doc))
	var pe *policy.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: accepted (%v), want a *policy.Error", doc, err)
	}
	return pe
}

// TestNameSpacesRefused: an error name with a space at an end, or a
// control character (a tab, a line break pasted in), is refused: it is
// outside every namespace this package checks, so it was taken as an
// application's own name and silently matched nothing.
func TestNameSpacesRefused(t *testing.T) {
	for _, name := range []string{` HTTP.503`, `HTTP.503 `, `Net.Reset\t`, `States.ALL\n`, `Orders.Conflict `} {
		doc := `[{"ErrorEquals": ["` + name + `"]}]`
		e := firstErr(t, doc)
		if e.Path != "Retry[0].ErrorEquals[0]" || e.Column != 19 || !strings.Contains(e.Msg, "space") {
			t.Errorf("%s: %v, want a refusal of the spaces at 1:19", doc, e)
		}
	}
	if _, err := policy.Parse([]byte(`[{"ErrorEquals": ["Orders.Out of stock"]}]`)); err != nil {
		t.Errorf("a name with a space inside: %v", err)
	}
	doc := policy.Document{Retry: []policy.Retrier{policy.NewRetrier("HTTP.503 ")}}
	if err := doc.Validate(); err == nil {
		t.Error("Validate accepted \"HTTP.503 \"")
	}
}

// TestGuardSecondsTooLarge: a Budget or Breaker duration too large for a
// time.Duration (292 years) is refused at its own field with the value
// written, not wrapped around to a negative duration that the guard then
// refused as "-2562047h47m16.854775808s out of range" at the object.
func TestGuardSecondsTooLarge(t *testing.T) {
	for _, tc := range []struct{ doc, path string }{
		{`{"Breaker": {"OpenSeconds": 1e12}}`, "Breaker.OpenSeconds"},
		{`{"Breaker": {"WindowSeconds": 1e10}}`, "Breaker.WindowSeconds"},
		{`{"Budget": {"WindowSeconds": 1e12}}`, "Budget.WindowSeconds"},
	} {
		e := firstErr(t, tc.doc)
		if e.Path != tc.path || !strings.Contains(e.Msg, "1e1") || strings.Contains(e.Msg, "-") {
			t.Errorf("%s: %v, want a refusal at %s naming the value", tc.doc, e, tc.path)
		}
	}
}

// TestIntegerTooLargeMessage: an integer field given a huge integer says
// it is out of range, not that it is not an integer.
func TestIntegerTooLargeMessage(t *testing.T) {
	for _, doc := range []string{
		`[{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 1e20}]`,
		`[{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 100000000000000000000}]`,
		`{"MaxTotalAttempts": -1e16}`,
	} {
		e := firstErr(t, doc)
		if strings.Contains(e.Msg, "not an integer") || !strings.Contains(e.Msg, "out of range") {
			t.Errorf("%s: %v, want \"out of range\"", doc, e)
		}
	}
	e := firstErr(t, `[{"ErrorEquals": ["HTTP.503"], "MaxAttempts": 2.5}]`)
	if !strings.Contains(e.Msg, "not an integer") {
		t.Errorf("2.5: %v, want \"not an integer\"", e)
	}
}

// TestDecorrelatedBackoffRateRefused: DECORRELATED jitter draws each wait
// up to three times the previous one and takes no BackoffRate: one written
// beside it is refused at its place, where it was silently ignored.
func TestDecorrelatedBackoffRateRefused(t *testing.T) {
	e := firstErr(t, `[{"ErrorEquals": ["States.ALL"], "BackoffRate": 1.5, "JitterStrategy": "DECORRELATED"}]`)
	if e.Path != "Retry[0].BackoffRate" || e.Column != 49 || !strings.Contains(e.Msg, "DECORRELATED") {
		t.Errorf("got %v, want a refusal of BackoffRate at 1:49", e)
	}
	e = firstErr(t, `[{"ErrorEquals": ["States.ALL"], "JitterStrategy": "DECORRELATED", "BackoffRate": 1}]`)
	if e.Path != "Retry[0].BackoffRate" {
		t.Errorf("BackoffRate after JitterStrategy: %v", e)
	}
	if _, err := policy.Parse([]byte(`[{"ErrorEquals": ["States.ALL"], "JitterStrategy": "DECORRELATED", "MaxDelaySeconds": 20}]`)); err != nil {
		t.Errorf("DECORRELATED without BackoffRate: %v", err)
	}
}

// A Budget or Breaker object with a bad value and a misspelt field gets
// both reported at once, as the rest of the document's errors are: only
// the first was, and the typo showed up once the value was fixed.
func TestGuardReportsEveryError(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{`{"Budget": {"Ratio": "x", "Bogus": 1}}`, []string{"Budget.Ratio", `unknown field "Bogus"`}},
		{`{"Breaker": {"MinCalls": 1.5, "OpenSecond": 3, "RetriesOnly": 1}}`,
			[]string{"Breaker.MinCalls", `unknown field "OpenSecond": did you mean "OpenSeconds"?`, "Breaker.RetriesOnly"}},
	} {
		_, err := policy.Parse([]byte(tc.doc))
		if err == nil {
			t.Errorf("%s: accepted", tc.doc)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not report %s", tc.doc, err, w)
			}
		}
	}
}

// A number of 100 000 digits is refused with a message that shows its
// start, not all of it: the whole number was put in the message, three
// times for a retrier's ErrorEquals (100 kB of digits on a terminal).
func TestLongNumberShortenedInMessage(t *testing.T) {
	long := strings.Repeat("9", 100000)
	for _, doc := range []string{
		`[{"ErrorEquals": ["States.ALL"], "MaxAttempts": ` + long + `}]`,
		`[{"ErrorEquals": [` + long + `]}]`,
		`{"TimeoutSeconds": -` + long + `}`,
		`{"Breaker": {"MinCalls": ` + long + `}}`,
	} {
		_, err := policy.Parse([]byte(doc))
		if err == nil {
			t.Errorf("%.60s…: accepted", doc)
			continue
		}
		if msg := err.Error(); len(msg) > 1000 || !strings.Contains(msg, "99999…") {
			t.Errorf("%.60s…: message of %d bytes (%.200q…), want the number shortened", doc, len(msg), msg)
		}
	}
}

// A long field name or error name is shortened in its message: an
// unknown field, a repeated one, or an error name of 100 000 characters
// was quoted whole.
func TestLongNamesShortenedInMessage(t *testing.T) {
	long := strings.Repeat("é", 50000)
	for _, doc := range []string{
		`{"` + long + `": 1}`,
		`{"Retry": [], "` + long + `": 1, "` + long + `": 2}`,
		`[{"ErrorEquals": ["HTTP.` + long + `"]}]`,
		`[{"ErrorEquals": ["States.` + long + `"]}]`,
		`[{"ErrorEquals": ["Net.` + long + `"]}]`,
		`[{"ErrorEquals": ["Exit.` + long + `"]}]`,
		`[{"ErrorEquals": ["http.` + long + `"]}]`,
		`[{"ErrorEquals": [" ` + long + `"]}]`,
		`{"Breaker": {"` + long + `": 1}}`,
	} {
		_, err := policy.Parse([]byte(doc))
		if err == nil {
			t.Errorf("%.60s…: accepted", doc)
			continue
		}
		if msg := err.Error(); len(msg) > 2000 || !strings.Contains(msg, "éé…") {
			t.Errorf("%.60s…: message of %d bytes (%.200q…), want the name shortened", doc, len(msg), msg)
		}
	}
	env := map[string]string{policy.EnvMaxAttempts: strings.Repeat("x", 100000)}
	if err := (&policy.Document{}).ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err == nil || len(err.Error()) > 1000 {
		t.Errorf("YAOKI_MAX_ATTEMPTS of 100 000 x: error of %d bytes, want it shortened", len(fmt.Sprint(err)))
	}
}
