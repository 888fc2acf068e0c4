package simcli

import (
	"regexp"
	"strings"
)

// noResultFlags are the flags that change how a run goes, not what it
// finds: the numbers are the same whatever they say.
var noResultFlags = map[string]bool{"workers": true, "progress": true}

// commandLine returns the command line a report records, from the
// arguments after the program's name: what a shell reads back as those
// arguments (quoted where needed, so that `--out ""` stays two words),
// without --workers and --progress, which change how long the run takes
// and what stderr shows, never the results. So the same seed and
// parameters record the same command, and the report the same bytes.
func commandLine(args []string) string {
	words := []string{"yaoki"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && noResultFlags[name] {
			if name == "workers" && !hasValue && i+1 < len(args) {
				i++ // its value is the next argument
			}
			continue
		}
		words = append(words, shellWord(a))
	}
	return strings.Join(words, " ")
}

// plainWord matches the words a shell reads as they are.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellWord returns s as one word that a POSIX shell reads back as s: as
// it is when it holds nothing the shell would interpret, else in single
// quotes (a single quote inside written '\”).
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
