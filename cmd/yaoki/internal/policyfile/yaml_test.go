package policyfile

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestYAMLToJSONKeepsLines(t *testing.T) {
	js, err := YAMLToJSON([]byte("# retry policy\nRetry:\n  - ErrorEquals: [HTTP.503, \"Net.Reset\"]\n    IntervalSeconds: 0.5\n    MaxAttempts: 2\n    Comment: yes\nTimeoutSeconds: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, js)
	}
	lines := strings.Split(string(js), "\n")
	if !strings.Contains(lines[3], `"IntervalSeconds":`) || !strings.Contains(lines[3], "0.5") || !strings.Contains(lines[6], `"TimeoutSeconds":`) {
		t.Fatalf("values left their YAML lines:\n%s", js)
	}
	r := v["Retry"].([]any)[0].(map[string]any)
	if r["Comment"] != "yes" || r["MaxAttempts"] != 2.0 || r["ErrorEquals"].([]any)[0] != "HTTP.503" {
		t.Fatalf("got %v", r)
	}
	for _, bad := range []string{"", "a: [", "<<: {a: 1}", "? [a]\n: 1"} {
		if _, err := YAMLToJSON([]byte(bad)); err == nil {
			t.Errorf("YAMLToJSON(%q) accepted it", bad)
		}
	}
}

func FuzzYAMLToJSON(f *testing.F) {
	for _, s := range []string{"Retry:\n  - ErrorEquals: [States.ALL]\n", "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", "Retry: []\n---\nRetry: []\n", "- 0x10\n- 0o17\n- -.inf\n- 1_000\n- !!float 3\n", "a: &x [1, 2]\nb: *x\n", "- 1e3\n- .nan\n- ~\n- true\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		js, err := YAMLToJSON(data)
		if err != nil {
			return
		}
		if !json.Valid(js) {
			t.Fatalf("YAML %q gave invalid JSON %q", data, js)
		}
	})
}

// A line indented with a tab, which YAML refuses, is named as such: the
// parser alone says "found character that cannot start any token".
func TestYAMLTabIndentNamed(t *testing.T) {
	for _, doc := range []string{
		"Retry:\n\t- ErrorEquals: [States.ALL]\n",
		"Retry:\n  - ErrorEquals: [States.ALL]\n  \tMaxAttempts: 2\n",
	} {
		_, err := YAMLToJSON([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "is indented with a tab: YAML indents with spaces only") {
			t.Errorf("YAMLToJSON(%q): %v; want the tab named", doc, err)
		}
	}
	if _, err := YAMLToJSON([]byte("Retry: [\n")); err == nil || strings.Contains(err.Error(), "tab") {
		t.Errorf("an unclosed bracket: %v; want an error that does not speak of tabs", err)
	}
}
