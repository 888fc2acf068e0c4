package curl

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

func TestCheckRange(t *testing.T) {
	for r, want := range map[string]string{
		"0-499": "0-499", "500": "500-", "+7": "+7", "07x": "7-", "-5": "-5", "0-1,5-": "0-1,5-", "": "", "abc": "abc",
		"99999999999999999999": "", "1-2\r\nX: y": "",
	} {
		o := &httpOptions{byteRange: r}
		err := o.checkRange(io.Discard)
		if want == "" && r != "" {
			if ee := (*cli.ExitError)(nil); !errors.As(err, &ee) || ee.Code != cli.ExitUsage {
				t.Errorf("-r %q: %v, want exit 2", r, err)
			}
			continue
		}
		if err != nil || o.byteRange != want {
			t.Errorf("-r %q: sends %q, %v; want %q", r, o.byteRange, err, want)
		}
	}
}

// FuzzCheckRange: a range is refused with exit 2 or sent without control
// characters, and digits without a dash get one.
func FuzzCheckRange(f *testing.F) {
	for _, s := range []string{"0-499", "500", "-5", "abc", "9999999999999999999999", "1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, r string) {
		o := &httpOptions{byteRange: r, silent: true}
		if err := o.checkRange(io.Discard); err != nil {
			if ee := (*cli.ExitError)(nil); !errors.As(err, &ee) || ee.Code != cli.ExitUsage {
				t.Fatalf("-r %q: %v, want exit 2", r, err)
			}
			return
		}
		if strings.IndexFunc(o.byteRange, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			t.Fatalf("-r %q sends %q", r, o.byteRange)
		}
		if o.byteRange != "" && o.byteRange[0] >= '0' && o.byteRange[0] <= '9' && !strings.Contains(o.byteRange, "-") {
			t.Fatalf("-r %q sends %q, without a dash", r, o.byteRange)
		}
	})
}
