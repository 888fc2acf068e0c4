package metrictest

import (
	"fmt"
	"strings"
	"testing"
)

func TestNormal(t *testing.T) {
	for in, want := range map[string]string{
		"b=2,a=1":                       "a=1,b=2",
		"a=1":                           "a=1",
		"yaoki_attempts_total{z=1,a=2}": "yaoki_attempts_total{a=2,z=1}",
		"up{}":                          "up{}",
	} {
		if got := normal(in); got != want {
			t.Errorf("normal(%q) = %q, want %q", in, got, want)
		}
	}
}

// recorder is a testing.TB that keeps what Errorf says.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestExpect(t *testing.T) {
	got := map[string]float64{"a=1,b=2": 3, "m{x=1,y=2}": 1}
	r := &recorder{TB: t}
	Expect(r, "same", got, map[string]float64{"b=2,a=1": 3, "m{y=2,x=1}": 1})
	if len(r.errs) != 0 {
		t.Fatalf("the same series in another order: %q, want no error", r.errs)
	}
	for _, want := range []map[string]float64{
		{"a=1,b=2": 4, "m{x=1,y=2}": 1},           // another value
		{"a=1,b=2": 3},                            // a series missing
		{"a=1,b=2": 3, "m{x=1,y=2}": 1, "c=3": 0}, // one more
	} {
		r := &recorder{TB: t}
		Expect(r, "metric", got, want)
		if len(r.errs) != 1 || !strings.HasPrefix(r.errs[0], "metric:\n got ") {
			t.Errorf("Expect(%v, %v): %q, want one error naming the metric", got, want, r.errs)
		}
	}
}

func ExampleKey() {
	fmt.Println(Key([]string{"yaoki.outcome=success", "yaoki.component=httpretry"}))
	// Output: yaoki.component=httpretry,yaoki.outcome=success
}
