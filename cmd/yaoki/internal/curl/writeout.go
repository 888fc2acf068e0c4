package curl

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/cmd/yaoki/internal/cli"
)

// writeOutVars are the -w variables yaoki http knows, as curl names them,
// and how each is written.
var writeOutVars = map[string]func(ti *transferInfo) string{
	"content_type":       func(ti *transferInfo) string { return ti.contentType },
	"errormsg":           func(ti *transferInfo) string { return ti.errMsg },
	"exitcode":           func(ti *transferInfo) string { return fmt.Sprint(ti.exitCode) },
	"filename_effective": func(ti *transferInfo) string { return ti.filename },
	"http_code":          func(ti *transferInfo) string { return fmt.Sprintf("%03d", ti.status) },
	"http_version":       func(ti *transferInfo) string { return ti.httpVersion() },
	"local_ip":           func(ti *transferInfo) string { return ti.local.ip },
	"local_port":         func(ti *transferInfo) string { return fmt.Sprint(ti.local.port) },
	"method":             func(ti *transferInfo) string { return ti.method },
	"num_headers":        func(ti *transferInfo) string { return fmt.Sprint(ti.numHeaders()) },
	"num_redirects":      func(ti *transferInfo) string { return fmt.Sprint(ti.redirects) },
	"num_retries":        func(ti *transferInfo) string { return fmt.Sprint(ti.retries) },
	"redirect_url":       func(ti *transferInfo) string { return ti.redirectURL },
	"referer":            func(ti *transferInfo) string { return ti.referer },
	"remote_ip":          func(ti *transferInfo) string { return ti.remote.ip },
	"remote_port":        func(ti *transferInfo) string { return fmt.Sprint(ti.remote.port) },
	"response_code":      func(ti *transferInfo) string { return fmt.Sprintf("%03d", ti.status) },
	"scheme":             func(ti *transferInfo) string { return ti.scheme },
	"size_download":      func(ti *transferInfo) string { return fmt.Sprint(ti.size) },
	"size_header":        func(ti *transferInfo) string { return fmt.Sprint(ti.sizeHeader) },
	"size_request":       func(ti *transferInfo) string { return fmt.Sprint(ti.sizeRequest) },
	"size_upload":        func(ti *transferInfo) string { return fmt.Sprint(ti.sizeUpload) },
	"speed_download":     func(ti *transferInfo) string { return fmt.Sprint(perSecond(ti.size, ti.took)) },
	"speed_upload":       func(ti *transferInfo) string { return fmt.Sprint(perSecond(ti.sizeUpload, ti.took)) },
	"num_connects":       func(ti *transferInfo) string { return fmt.Sprint(ti.connects) },
	"time_namelookup":    func(ti *transferInfo) string { return curlSeconds(ti.phases.namelookup) },
	"time_connect":       func(ti *transferInfo) string { return curlSeconds(ti.phases.connect) },
	"time_appconnect":    func(ti *transferInfo) string { return curlSeconds(ti.phases.appconnect) },
	"time_pretransfer":   func(ti *transferInfo) string { return curlSeconds(ti.phases.pretransfer) },
	"time_starttransfer": func(ti *transferInfo) string { return curlSeconds(ti.phases.starttransfer) },
	"time_redirect":      func(ti *transferInfo) string { return curlSeconds(ti.phases.redirect) },
	"time_total":         func(ti *transferInfo) string { return curlSeconds(ti.took) },
	"url":                func(ti *transferInfo) string { return ti.urlGiven },
	"url_effective":      func(ti *transferInfo) string { return ti.url },
	"urlnum":             func(ti *transferInfo) string { return "0" }, // yaoki http takes one URL
}

// writeOutSwitches are the -w variables that write nothing but steer the
// output: %{stdout} and %{stderr} choose where the rest goes, %{onerror}
// writes the rest only if the run failed.
var writeOutSwitches = []string{"onerror", "stderr", "stdout"}

// writeOutJSON is %{json}, which writes every variable of writeOutVars.
const writeOutJSON = "json"

// writeOutNames lists the -w variables in order, for messages.
func writeOutNames() string {
	names := slices.Concat(slices.Collect(maps.Keys(writeOutVars)), writeOutSwitches, []string{writeOutJSON})
	slices.Sort(names)
	return strings.Join(names, ", ") + ", and %header{NAME}"
}

// transferInfo is what -w can write about a finished request.
type transferInfo struct {
	status      int // 0: no answer
	proto       [2]int
	header      http.Header // the final answer's
	took        time.Duration
	retries     int
	redirects   int
	url         string // the final answer's URL (%{url_effective})
	urlGiven    string // the URL given, as written (%{url})
	scheme      string // as curl 7.88 writes it: HTTP, HTTPS
	redirectURL string // the Location of a final redirect not followed
	referer     string // the final request's
	filename    string // -o's
	method      string
	exitCode    int
	errMsg      string
	contentType string
	size        int64 // the final answer's body, as written
	sizeHeader  int64 // the status lines and headers received (with -L, of every hop)
	sizeRequest int64 // the requests sent, headers and bodies (with -L, of every hop)
	sizeUpload  int64 // the final request's body
	connects    int   // new connections made for the final answer (with -L, of every hop)
	phases      phases
	local       endpoint
	remote      endpoint
}

// phases are -w's times of the final answer (or, without one, of the last
// attempt), each from the start of the run: see connTrace.
type phases struct {
	namelookup, connect, appconnect, pretransfer, starttransfer, redirect time.Duration
}

// curlSeconds writes d as curl 7.88 writes its times: seconds with six
// decimals.
func curlSeconds(d time.Duration) string {
	return fmt.Sprintf("%d.%06d", d/time.Second, (d%time.Second)/time.Microsecond)
}

// perSecond is curl's speed: bytes per second over d, in whole bytes (0
// when no time passed).
func perSecond(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// endpoint is one end of the connection that carried the final answer.
type endpoint struct {
	ip   string
	port int
}

func endpointOf(a net.Addr) endpoint {
	if ta, ok := a.(*net.TCPAddr); ok {
		return endpoint{ip: ta.IP.String(), port: ta.Port}
	}
	return endpoint{}
}

// httpVersion is the final answer's HTTP version as curl writes it: 1,
// 1.1, 2, 3; 0 without an answer.
func (ti *transferInfo) httpVersion() string {
	switch {
	case ti.status == 0:
		return "0"
	case ti.proto[0] == 1 && ti.proto[1] == 0:
		return "1"
	case ti.proto[0] == 1:
		return fmt.Sprintf("1.%d", ti.proto[1])
	}
	return fmt.Sprint(ti.proto[0])
}

func (ti *transferInfo) numHeaders() int {
	n := 0
	for _, v := range ti.header {
		n += len(v)
	}
	return n
}

// answered sets what -w says of the final answer resp to a request for
// tg (or a redirect's URL): its status, URL (as written, for tg's),
// method, headers, Content-Type, the redirects followed to reach it, and
// for a redirect not followed, where it pointed.
func (ti *transferInfo) answered(resp *http.Response, tg *target) {
	ti.status, ti.url, ti.contentType = resp.StatusCode, tg.textOf(resp.Request, false), resp.Header.Get("Content-Type")
	ti.method, ti.header, ti.proto = resp.Request.Method, resp.Header, [2]int{resp.ProtoMajor, resp.ProtoMinor}
	ti.scheme, ti.referer = strings.ToUpper(resp.Request.URL.Scheme), resp.Request.Header.Get("Referer")
	ti.redirectURL = ""
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		ti.redirectURL = tg.location(resp)
	}
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
	b, err := readFileArg(name, stdin)
	if err != nil {
		return "", cli.Exit(curlReadError, fmt.Sprintf("(26) -w %s: cannot read the format: %v", v, err))
	}
	return string(b), nil
}

// checkWriteOut returns the names of the variables in format that -w does
// not know, so that they can be reported before the request is sent.
func checkWriteOut(format string) []string {
	var unknown []string
	expandWriteOut(format, func(name string, header bool) (string, bool) {
		if _, ok := writeOutVars[name]; !header && !ok && !slices.Contains(writeOutSwitches, name) && name != writeOutJSON {
			unknown = append(unknown, name)
		}
		return "", false
	}, io.Discard, func(string) (io.Writer, bool) { return io.Discard, true })
	return unknown
}

// writeOut expands format as curl's -w does, on stdout: %{name} variables,
// %header{NAME} (the final answer's header NAME, its values joined by
// ", "), %% for %, and the escapes \n, \r and \t; a backslash before any
// other character is written with it (\\ writes \\). An unknown
// variable writes nothing. %{stderr} sends the rest to stderr, %{stdout}
// back to stdout, and %{onerror} ends the output unless the run failed.
func (ti *transferInfo) writeOut(format string, stdout, stderr io.Writer) {
	expandWriteOut(format, ti.value, stdout, func(name string) (io.Writer, bool) {
		switch name {
		case "stderr":
			return stderr, true
		case "onerror":
			return nil, ti.exitCode != 0
		}
		return stdout, true
	})
}

func (ti *transferInfo) value(name string, header bool) (string, bool) {
	if header {
		return strings.Join(ti.header.Values(name), ", "), true
	}
	if f, ok := writeOutVars[name]; ok {
		return f(ti), true
	}
	if name == writeOutJSON {
		return ti.json(), true
	}
	return "", false
}

// expandWriteOut writes format expanded on w, with value for each
// variable (header: a %header{NAME}); at each switch
// (writeOutSwitches) it asks steer where the rest goes (nil: the same
// writer), or whether to stop.
func expandWriteOut(format string, value func(name string, header bool) (string, bool), w io.Writer, steer func(string) (io.Writer, bool)) {
	var b strings.Builder
	flush := func() {
		_, _ = io.WriteString(w, b.String())
		b.Reset()
	}
	defer flush()
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '%' && i+1 < len(format) && format[i+1] == '%':
			b.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i+1:], "header{"):
			end := strings.IndexByte(format[i+8:], '}')
			if end < 0 { // written as it is, as curl writes it
				b.WriteString("%header{")
				i += 7
				continue
			}
			if name := format[i+8 : i+8+end]; name != "" {
				v, _ := value(name, true)
				b.WriteString(v)
			}
			i += 8 + end
		case c == '%' && i+1 < len(format) && format[i+1] == '{':
			end := strings.IndexByte(format[i+2:], '}')
			if end < 0 {
				b.WriteString("%{")
				i++
				continue
			}
			name := format[i+2 : i+2+end]
			i += 2 + end
			if slices.Contains(writeOutSwitches, name) {
				flush()
				to, goOn := steer(name)
				if !goOn {
					b.Reset()
					return
				}
				if to != nil {
					w = to
				}
				continue
			}
			v, _ := value(name, false)
			b.WriteString(v)
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
}
