package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// writeOutVars are the -w variables yaoki http knows, as curl names them,
// and how each is written.
var writeOutVars = map[string]func(ti *transferInfo) string{
	"content_type":  func(ti *transferInfo) string { return ti.contentType },
	"errormsg":      func(ti *transferInfo) string { return ti.errMsg },
	"exitcode":      func(ti *transferInfo) string { return fmt.Sprint(ti.exitCode) },
	"http_code":     func(ti *transferInfo) string { return fmt.Sprintf("%03d", ti.status) },
	"method":        func(ti *transferInfo) string { return ti.method },
	"num_redirects": func(ti *transferInfo) string { return fmt.Sprint(ti.redirects) },
	"num_retries":   func(ti *transferInfo) string { return fmt.Sprint(ti.retries) },
	"response_code": func(ti *transferInfo) string { return fmt.Sprintf("%03d", ti.status) },
	"size_download": func(ti *transferInfo) string { return fmt.Sprint(ti.size) },
	"time_total":    func(ti *transferInfo) string { return fmt.Sprintf("%.6f", ti.took.Seconds()) },
	"url_effective": func(ti *transferInfo) string { return ti.url },
}

// writeOutNames lists the -w variables in order, for messages.
func writeOutNames() string {
	return strings.Join(slices.Sorted(maps.Keys(writeOutVars)), ", ")
}

// transferInfo is what -w can write about a finished request.
type transferInfo struct {
	status      int // 0: no answer
	took        time.Duration
	retries     int
	redirects   int
	url         string
	method      string
	exitCode    int
	errMsg      string
	contentType string
	size        int64
}

// answered sets what -w says of the final answer resp to a request for
// tg (or a redirect's URL): its status, URL (as written, for tg's),
// method, Content-Type and the redirects followed to reach it.
func (ti *transferInfo) answered(resp *http.Response, tg *target) {
	ti.status, ti.url, ti.contentType = resp.StatusCode, resp.Request.URL.String(), resp.Header.Get("Content-Type")
	if resp.Request.Response == nil { // not a redirect's
		ti.url = tg.text(resp.Request.URL, false)
	}
	ti.method = resp.Request.Method
	ti.redirects = 0
	for r := resp.Request; r.Response != nil; r = r.Response.Request {
		ti.redirects++
	}
}

// readWriteOut returns the -w format: the value itself, or the contents of
// a file for @FILE (@- for stdin), as curl reads it.
func readWriteOut(v string, stdin io.Reader) (string, error) {
	name, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", exit(curlReadError, fmt.Sprintf("(26) -w %s: cannot read the format: %v", v, err))
	}
	return string(b), nil
}

// checkWriteOut returns the names of the variables in format that -w does
// not know, so that they can be reported before the request is sent.
func checkWriteOut(format string) []string {
	var unknown []string
	expandWriteOut(format, func(name string) (string, bool) {
		if _, ok := writeOutVars[name]; !ok {
			unknown = append(unknown, name)
		}
		return "", false
	})
	return unknown
}

// writeOut expands format as curl's -w does: %{name} variables, %% for %,
// and the escapes \n, \r and \t; a backslash before any other character
// is written with it (\\ writes \\). An unknown variable writes nothing.
func (ti *transferInfo) writeOut(format string) string {
	return expandWriteOut(format, ti.value)
}

func (ti *transferInfo) value(name string) (string, bool) {
	if f, ok := writeOutVars[name]; ok {
		return f(ti), true
	}
	return "", false
}

func expandWriteOut(format string, value func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '%' && i+1 < len(format) && format[i+1] == '%':
			b.WriteByte('%')
			i++
		case c == '%' && i+1 < len(format) && format[i+1] == '{':
			end := strings.IndexByte(format[i+2:], '}')
			if end < 0 {
				b.WriteString(format[i:])
				return b.String()
			}
			v, _ := value(format[i+2 : i+2+end])
			b.WriteString(v)
			i += 2 + end
		case c == '\\' && i+1 < len(format):
			switch format[i+1] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte('\\')
				b.WriteByte(format[i+1])
			}
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
