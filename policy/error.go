package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidDocument matches every error that Parse, Load, Validate and ApplyEnv
// return for a document that cannot be used.
var ErrInvalidDocument = errors.New("policy: invalid document")

// Error is one thing wrong with a document: where it is (file, line,
// column, and the JSON path such as Retry[1].BackoffRate) and what is
// wrong, with the value found and what is accepted. Parse and Load return
// every error they find (the first 100, then one that says how many more
// there are), joined with errors.Join; errors.As gives the first.
type Error struct {
	File   string // the file's name, "" when parsed from bytes
	Line   int    // 1-based; 0 when the error has no place in a file
	Column int    // 1-based, in bytes
	Offset int64  // byte offset in the file
	Path   string // JSON path of the value, e.g. Retry[1].BackoffRate; "" for the whole document
	Msg    string // what is wrong and what is accepted
}

// Error returns "policy: FILE:LINE:COL: PATH: MSG", leaving out the parts
// that are not known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if e.File != "" || e.Line > 0 {
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is matches ErrInvalidDocument.
func (e *Error) Is(target error) bool { return target == ErrInvalidDocument }

// maxErrors bounds the errors one document reports: enough to fix a
// document by, and a file of half a million bad values is refused at once
// with a text a terminal can show, not after minutes with megabytes.
const maxErrors = 100

// errs collects the errors of one document, in file order: the first
// maxErrors, and how many more there were.
type errs struct {
	list []error
	more int
	file string
}

// full reports whether no more errors are kept: the caller can skip
// building one (its position costs a scan of the file).
func (l *errs) full() bool { return len(l.list) >= maxErrors }

// add keeps e, or counts it once maxErrors are kept.
func (l *errs) add(e *Error) {
	if l.full() {
		l.more++
		return
	}
	l.list = append(l.list, e)
}

func (l *errs) err() error {
	list := l.list
	if l.more > 0 {
		what := "errors"
		if l.more == 1 {
			what = "error"
		}
		list = append(list, &Error{File: l.file, Msg: fmt.Sprintf("%d more %s not shown: fix these first", l.more, what)})
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return errors.Join(list...)
}
