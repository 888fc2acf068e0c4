package curl

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// maxConfigDepth bounds -K files that name other -K files (one that names
// itself would never end).
const maxConfigDepth = 10

// configFlag is -K/--config: at its place among the flags, it sets the
// flags its FILE names, as curl 7.88 reads a config file, so that a flag
// given after -K overrides the file's and one given before is overridden
// by it.
type configFlag struct {
	fs    *pflag.FlagSet
	stdin func() io.Reader
	files []string
	depth int
}

func (c *configFlag) String() string { return strings.Join(c.files, ",") }
func (c *configFlag) Type() string   { return "FILE" }

// Set reads FILE ("-": stdin) and sets the flags of its lines.
func (c *configFlag) Set(name string) error {
	if c.depth >= maxConfigDepth {
		return fmt.Errorf("more than %d config files within one another (does %s name itself?)", maxConfigDepth, name)
	}
	b, err := readFileArg(name, c.stdin())
	if err != nil {
		return &configReadError{name: name, err: err}
	}
	c.files = append(c.files, name)
	c.depth++
	defer func() { c.depth-- }()
	for i, line := range strings.Split(string(b), "\n") {
		opt, value, hasValue, err := configLine(line)
		if err != nil {
			return fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
		if opt == "" {
			continue
		}
		if err := c.set(opt, value, hasValue); err != nil {
			return fmt.Errorf("%s line %d: %v", name, i+1, err)
		}
	}
	return nil
}

// set sets the flag named opt ("name", "--name" or "-x") to value.
func (c *configFlag) set(opt, value string, hasValue bool) error {
	var f *pflag.Flag
	given := opt
	switch {
	case strings.HasPrefix(opt, "--"):
		f = c.fs.Lookup(opt[2:])
	case strings.HasPrefix(opt, "-"):
		if len(opt) != 2 {
			return fmt.Errorf("%s: one option a line, a short one as -x", opt)
		}
		f = c.fs.ShorthandLookup(opt[1:])
	default:
		given = "--" + opt
		f = c.fs.Lookup(opt)
	}
	if f == nil {
		long := strings.TrimPrefix(given, "--")
		if !strings.HasPrefix(given, "--") {
			long = curlLong(given[1:])
		}
		if what, ok := notTaken(given, long); ok {
			return errors.New(what)
		}
		return fmt.Errorf("unknown option %s, not a curl flag either", given)
	}
	if f.NoOptDefVal != "" {
		// A switch: curl takes it whatever follows it on the line.
		value = f.NoOptDefVal
	} else if !hasValue {
		return fmt.Errorf("%s needs a value", given)
	}
	return c.fs.Set(f.Name, value)
}

// configLine splits one line of a curl config file into its option and
// value, as curl 7.88 reads it: blanks, comments (#) and empty lines give
// no option; the option ends at a space, or at = or : when it has no
// leading dash; the value after the separators is up to the next space,
// or a "quoted" string in which \", \\, \t, \n, \r and \v are the
// characters they escape.
func configLine(line string) (opt, value string, hasValue bool, err error) {
	line = strings.TrimRight(strings.TrimLeft(line, " \t\r\v\f"), "\r")
	if line == "" || strings.IndexByte("#/*", line[0]) >= 0 {
		return "", "", false, nil
	}
	dashed := line[0] == '-'
	isSep := func(c byte) bool { return !dashed && (c == '=' || c == ':') }
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }
	i := 0
	for i < len(line) && !isSpace(line[i]) && !isSep(line[i]) {
		i++
	}
	opt = line[:i]
	for i < len(line) && (isSpace(line[i]) || isSep(line[i])) {
		i++
	}
	rest := line[i:]
	if rest == "" {
		return opt, "", false, nil
	}
	if rest[0] != '"' {
		if j := strings.IndexAny(rest, " \t\v\f"); j >= 0 {
			rest = rest[:j]
		}
		return opt, rest, true, nil
	}
	var b strings.Builder
	for j := 1; j < len(rest); j++ {
		c := rest[j]
		switch c {
		case '"':
			return opt, b.String(), true, nil
		case '\\':
			if j+1 < len(rest) {
				j++
				c = rest[j]
				switch c {
				case 't':
					c = '\t'
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 'v':
					c = '\v'
				}
			}
		}
		b.WriteByte(c)
	}
	return "", "", false, fmt.Errorf("%s: the quoted value has no closing \"", opt)
}

// configReadError is a -K FILE that could not be read: curl's exit 26.
type configReadError struct {
	name string
	err  error
}

func (e *configReadError) Error() string { return "cannot read it: " + e.err.Error() }
func (e *configReadError) Unwrap() error { return e.err }
