package policyfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/policy"
)

// TestYAMLAliasExpansionBounded: a "billion laughs" file, aliases of
// aliases, each used ten times, is refused before it is expanded (nine
// levels would write 10^9 values).
func TestYAMLAliasExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for c := 'b'; c <= 'i'; c++ {
		prev := string(c - 1)
		b.WriteString(string(c) + ": &" + string(c) + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n")
	}
	b.WriteString("Retry: [{ErrorEquals: [States.ALL]}]\n")
	_, err := YAMLToJSON([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "alias") {
		t.Fatalf("YAMLToJSON of a billion laughs: %v, want a refusal that names the aliases", err)
	}
	// Aliases used as a policy uses them are expanded.
	js, err := YAMLToJSON([]byte("x: &errs [HTTP.503, Net.Reset]\nRetry:\n  - ErrorEquals: *errs\n  - ErrorEquals: *errs\n"))
	if err != nil || !strings.Contains(string(js), `"ErrorEquals":["HTTP.503","Net.Reset"]`) {
		t.Fatalf("a plain alias: %s, %v", js, err)
	}
}

// TestYAMLSecondDocumentRefused: a file of two YAML documents (---) is
// refused with the line of the second: only the first was read, and the
// rest silently ignored.
func TestYAMLSecondDocumentRefused(t *testing.T) {
	_, err := YAMLToJSON([]byte("Retry:\n  - ErrorEquals: [States.ALL]\n---\nRetry:\n  - ErrorEquals: [HTTP.503]\n    MaxAttempts: 9\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "one document") {
		t.Fatalf("two documents: %v, want a refusal naming line 3, the ---", err)
	}
	for _, ok := range []string{"---\nRetry: []\n", "Retry: []\n...\n", "Retry: []\n# ---\n"} {
		if _, err := YAMLToJSON([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestLoadTooLarge: a YAML file larger than policy.MaxDocumentSize is
// refused, with its name, before it is parsed.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	data := "Retry: [{ErrorEquals: [States.ALL]}]\nComment: " + strings.Repeat("x", policy.MaxDocumentSize) + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, policy.ErrInvalidDocument) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a %d-byte YAML file: %v, want a refusal naming it", len(data), err)
	}
}

// TestYAMLNumberForms: YAML integers written in hex, octal or with a sign
// or underscores are the numbers they stand for; .inf and .nan, which JSON
// cannot hold, are refused with their line as numbers, not passed on as
// strings (policy then said ".inf" is a string).
func TestYAMLNumberForms(t *testing.T) {
	for lit, want := range map[string]string{"0x10": "16", "0o17": "15", "+3": "3", "1_000": "1000", "3": "3", "2.5": "2.5", "!!float 3": "3"} {
		js, err := YAMLToJSON([]byte("MaxAttempts: " + lit + "\n"))
		if err != nil || !strings.Contains(string(js), `"MaxAttempts":`+want+"}") {
			t.Errorf("%s: %s, %v; want %s", lit, js, err, want)
		}
	}
	for _, lit := range []string{".inf", "-.Inf", ".nan"} {
		_, err := YAMLToJSON([]byte("Retry:\n  - ErrorEquals: [States.ALL]\n    BackoffRate: " + lit + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "finite") {
			t.Errorf("%s: %v, want a refusal at line 3", lit, err)
		}
	}
	if js, err := YAMLToJSON([]byte("Comment: !!str 0x10\n")); err != nil || !strings.Contains(string(js), `"0x10"`) {
		t.Errorf("a !!str: %s, %v", js, err)
	}
}

// TestYAMLFloatUnderflowRefused: a YAML float written other than 0 but
// too small for a float64 (1e-400) is refused with its line; it became
// 0 in the JSON policy reads ("IntervalSeconds": 0, every retry at once),
// where policy refuses the same number written in JSON.
func TestYAMLFloatUnderflowRefused(t *testing.T) {
	for _, lit := range []string{"1e-400", "-2.5e-999", ".5e-330", "!!float 7e-400"} {
		_, err := YAMLToJSON([]byte("Retry:\n  - ErrorEquals: [States.ALL]\n    IntervalSeconds: " + lit + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "too small") {
			t.Errorf("%s: %v, want a refusal at line 3", lit, err)
		}
	}
	for _, lit := range []string{"0.0", "-0.0", "0e-400", "1e-300"} {
		if _, err := YAMLToJSON([]byte("IntervalSeconds: " + lit + "\n")); err != nil {
			t.Errorf("%s: %v", lit, err)
		}
	}
}
