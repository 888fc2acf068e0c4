package retrytest_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yaoki-go/yaoki/retrytest"
)

func TestParseScript(t *testing.T) {
	steps, err := retrytest.ParseScript(" 503 , 429:retry-after=1 ,reset*2, 200:body=ok:delay=10ms:header=X-A=b=c:do-not-retry,hang,eof,refused")
	if err != nil {
		t.Fatal(err)
	}
	want := []retrytest.Step{
		{Status: 503},
		{Status: 429, RetryAfter: "1"},
		{Fail: retrytest.Reset},
		{Fail: retrytest.Reset},
		{Status: 200, Body: "ok", Delay: 10 * time.Millisecond, Header: [][2]string{{"X-A", "b=c"}}, DoNotRetry: true},
		{Fail: retrytest.Hang},
		{Fail: retrytest.EOF},
		{Fail: retrytest.Refused},
	}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("got %+v\nwant %+v", steps, want)
	}
	if got := retrytest.FormatScript(steps[:2]); got != "503,429:retry-after=1" {
		t.Errorf("FormatScript: got %q", got)
	}
	cut, err := retrytest.ParseScript("200:cut=0:body=hello,206:body=hello:cut=4")
	if err != nil {
		t.Fatal(err)
	}
	if want := []retrytest.Step{{Status: 200, Body: "hello", Cut: true}, {Status: 206, Body: "hello", Cut: true, CutAfter: 4}}; !reflect.DeepEqual(cut, want) {
		t.Fatalf("got %+v, want %+v", cut, want)
	}
	if got := retrytest.FormatScript(cut); got != "200:body=hello:cut=0,206:body=hello:cut=4" {
		t.Errorf("FormatScript: got %q", got)
	}
}

func TestParseScriptErrors(t *testing.T) {
	cases := map[string]string{
		"":                   "empty script",
		"503,,200":           `step 2 "": "" is not a step`,
		"99":                 "status code in 100..599",
		"2000":               "status code in 100..599",
		"boom":               "reset, eof, refused, hang",
		"503*0":              "repeat count",
		"503*x":              "repeat count",
		"503:delay=fast":     "Go duration",
		"503:delay=-1s":      "Go duration",
		"503:retry-after=":   "retry-after needs a value",
		"503:header=X":       "header=Name=value",
		"503:header=A B=c":   "header=Name=value",
		"503:color=red":      `option "color=red"`,
		"503:do-not-retry=":  `option "do-not-retry="`,
		"200:body=ok:cut=x":  "cut \"x\": want the bytes",
		"200:body=ok:cut=-1": "cut \"-1\"",
		"200:body=ok:cut=2":  "body longer than the bytes sent before the cut",
		"200:cut=0":          "body longer",
		"reset:cut=0":        "want a status",
	}
	for script, want := range cases {
		_, err := retrytest.ParseScript(script)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScript(%q): got %v, want an error containing %q", script, err, want)
		}
		var se *retrytest.ScriptError
		if !errors.Is(err, retrytest.ErrScript) || !errors.As(err, &se) || se.Msg == "" {
			t.Errorf("ParseScript(%q): error %v (%T) is not a *ScriptError matching ErrScript", script, err, err)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{"503,429:retry-after=1,200", "reset*3,200:body=ok", "hang:delay=1s", "503:header=A=b:do-not-retry", "429:retry-after=date+3s", "200:body=hello:cut=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		steps, err := retrytest.ParseScript(script)
		if err != nil {
			return
		}
		// What parses prints back to a script that parses to the same.
		again, err := retrytest.ParseScript(retrytest.FormatScript(steps))
		if err != nil {
			t.Fatalf("FormatScript(%q) = %q does not parse: %v", script, retrytest.FormatScript(steps), err)
		}
		if !reflect.DeepEqual(steps, again) {
			t.Fatalf("%q: parsed %+v, round trip %+v", script, steps, again)
		}
	})
}
