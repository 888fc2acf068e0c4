package e2e

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// yaoki version and yaoki --version print the module version (and the
// VCS revision when the toolchain recorded one) from the build info.
func TestVersion(t *testing.T) {
	a := run(t, nil, "version")
	b := run(t, nil, "--version")
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout {
		t.Fatalf("version: exit %d %q; --version: exit %d %q; want 0 and the same line", a.code, a.stdout, b.code, b.stdout)
	}
	re := regexp.MustCompile(`^yaoki (\(devel\)|v\S+)( revision [0-9a-f]{40}( \(modified\))?( of \S+)?)? go\S+ \S+/\S+\n$`)
	if !re.MatchString(a.stdout) || !strings.Contains(a.stdout, runtime.Version()) {
		t.Errorf("version printed %q; want yaoki VERSION [revision REV] GOVERSION OS/ARCH", a.stdout)
	}
}
