package curl

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// curlOption is one of curl's options (curlOptions).
type curlOption struct {
	short   string // the letter of its short form, "" for none
	value   bool   // whether it takes a value
	summary string // curl's one line on it
}

// curlLong returns the long name of curl's short option letter, or "".
func curlLong(letter string) string {
	for name, o := range curlOptions {
		if o.short == letter {
			return name
		}
	}
	return ""
}

// unknownFlag turns pflag's error for a flag that yaoki http does not
// define into one that names the flag as given, says what it is in curl
// (or that curl has no such flag either), and lists the curl flags yaoki
// http takes, so that a script moved from curl learns what to change
// instead of a run that drops what the flag asked for. Other errors are
// returned as they are.
func unknownFlag(err error, fs *pflag.FlagSet) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name, long, given := ne.GetSpecifiedName(), "", ""
	if ne.GetSpecifiedShortnames() != "" {
		given, long = "-"+name, curlLong(name)
	} else {
		given, long = "--"+name, name
	}
	what, ok := notTaken(given, long)
	if !ok {
		what = fmt.Sprintf("unknown flag: %s, not a curl flag either", given)
		if hint := strings.TrimPrefix(cli.SuggestFlag(err, fs).Error(), err.Error()); hint != "" {
			what += hint
		}
	}
	return fmt.Errorf("%s\nyaoki http takes these curl flags: %s", what, strings.Join(curlFlagsTaken(fs), ", "))
}

// notTaken says what the flag given (-x or --name; long is its long
// name) is in curl 7.88 and that yaoki http does not take it; false when
// curl has no such flag either.
func notTaken(given, long string) (string, bool) {
	if o, ok := curlOptions[long]; ok {
		if given == "--"+long {
			return fmt.Sprintf("%s (curl's: %s) is a curl flag that yaoki http does not take", given, o.summary), true
		}
		return fmt.Sprintf("%s (curl's --%s: %s) is a curl flag that yaoki http does not take", given, long, o.summary), true
	}
	if b, ok := curlOptions[strings.TrimPrefix(long, "no-")]; ok && strings.HasPrefix(long, "no-") && !b.value {
		return fmt.Sprintf("%s (curl's --%s turned off) is a curl flag that yaoki http does not take", given, strings.TrimPrefix(long, "no-")), true
	}
	return "", false
}

// curlFlagsTaken lists the flags of fs that are curl's, as "--name (-x)",
// sorted by name: the hidden -# and -N under their curl names.
func curlFlagsTaken(fs *pflag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		name := f.Name
		if f.Hidden && f.Shorthand != "" {
			name = curlLong(f.Shorthand)
		}
		o, ok := curlOptions[name]
		if !ok || f.Hidden && f.Shorthand == "" {
			return
		}
		if o.short != "" {
			out = append(out, fmt.Sprintf("--%s (-%s)", name, o.short))
		} else {
			out = append(out, "--"+name)
		}
	})
	sort.Strings(out)
	return slicesCompact(out)
}

// slicesCompact drops the repeats of a sorted list (--progress-bar is
// both a long flag and the hidden -#).
func slicesCompact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
