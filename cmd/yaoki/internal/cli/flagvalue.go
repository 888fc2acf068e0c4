package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// acceptedValues says, for each pflag value type whose parse errors are
// Go's own ("strconv.Atoi: parsing \"abc\": invalid syntax"), what a user
// may write instead.
var acceptedValues = map[string]string{
	"int":           "want a whole number such as 3",
	"int64":         "want a whole number such as 3",
	"int32":         "want a whole number such as 3",
	"uint":          "want a whole number ≥ 0 such as 7",
	"uint64":        "want a whole number ≥ 0 such as 7",
	"uint32":        "want a whole number ≥ 0 such as 7",
	"float64":       "want a number such as 0.5",
	"float32":       "want a number such as 0.5",
	"bool":          "want true or false (the flag alone is true)",
	"intSlice":      "want whole numbers separated by commas, such as 10,100",
	"float64Slice":  "want numbers separated by commas, such as 0.01,0.1,0.5",
	"duration":      "want a duration with its unit, such as 250ms, 1.5s or 2m",
	"durationSlice": "want durations with their units separated by commas, such as 5s,10s",
}

// FlagValueError rewrites the error of a flag value that did not parse so
// that it says what the flag accepts, in place of the parser's words. An
// error of yaoki's own flag types (which explain themselves), or of any
// other kind, is returned as it is.
func FlagValueError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	want, ok := acceptedValues[iv.GetFlag().Value.Type()]
	cause := iv.Unwrap()
	var ne *strconv.NumError
	if !ok || cause == nil || !errors.As(cause, &ne) && !strings.HasPrefix(cause.Error(), "time: ") {
		return err
	}
	if ne != nil && errors.Is(ne.Err, strconv.ErrRange) {
		want = strconv.Quote(ne.Num) + " is out of range: " + want
	}
	msg, found := strings.CutSuffix(iv.Error(), ": "+cause.Error())
	if !found {
		return err
	}
	return errors.New(msg + ": " + want)
}

// SuggestFlag adds to an unknown long flag's error the flag of fs whose
// name is nearest, when it is within two edits ("unknown flag:
// --max-atempts (did you mean --max-attempts?)"). Other errors, and flags
// with no near name, are returned as they are; hidden flags are never
// suggested.
func SuggestFlag(err error, fs *pflag.FlagSet) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" || fs == nil {
		return err
	}
	typed := ne.GetSpecifiedName()
	best, bestDist := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(typed, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
