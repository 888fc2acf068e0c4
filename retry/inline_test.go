package retry_test

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/retry"
)

// zeroPolicyCall and retrierCall are the two call sites that
// TestSuccessPathInlines compiles.
func zeroPolicyCall(ctx context.Context, fn func(context.Context) error) error {
	return retry.Do(ctx, retry.Policy{}, fn)
}

func retrierCall(ctx context.Context, r *retry.Retrier, fn func(context.Context) error) error {
	return r.Do(ctx, fn)
}

// TestSuccessPathInlines compiles this package's tests with the compiler's
// inlining report and checks that Do and (*Retrier).Do are inlined at their
// call sites, with the zero Policy's check: the success path's speed
// (BenchmarkDoSuccess) rests on it, and a change that pushes either over the
// compiler's budget would otherwise show only as a slower benchmark.
func TestSuccessPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.Command(goTool, "test", "-c", "-o", filepath.Join(t.TempDir(), "retry.test"), "-gcflags=-m", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -c -gcflags=-m: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "inline_test.go:") {
			if _, call, ok := strings.Cut(line, "inlining call to "); ok {
				seen[call] = true
			}
		}
	}
	for _, want := range []string{"retry.Do", "retry.(*Policy).quick", "retry.(*Retrier).Do"} {
		if !seen[want] {
			t.Errorf("the compiler did not inline %s at its call site in inline_test.go; it inlined %v", want, seen)
		}
	}
}
