package curl

import (
	"io"
	"net/http"
	"testing"
)

func TestParseContinueAt(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int64
		auto   bool
		bad    bool
	}{
		{in: "-", auto: true},
		{in: "0"},
		{in: "1024", offset: 1024},
		{in: "+3", offset: 3}, // curl takes a leading '+'
		{in: " 3", offset: 3}, // and leading spaces
		{in: "9223372036854775807", offset: 9223372036854775807},
		{in: "", bad: true},
		{in: "-5", bad: true}, // negative
		{in: "-0", bad: true}, // curl: "expected a positive numerical parameter"
		{in: "3 ", bad: true}, // trailing characters
		{in: "3x", bad: true},
		{in: "0x10", bad: true},
		{in: "+", bad: true},
		{in: "9223372036854775808", bad: true}, // 2^63
	} {
		offset, auto, err := parseContinueAt(tc.in)
		if (err != nil) != tc.bad || offset != tc.offset || auto != tc.auto {
			t.Errorf("parseContinueAt(%q) = %d, %v, %v; want %d, %v, error %v", tc.in, offset, auto, err, tc.offset, tc.auto, tc.bad)
		}
	}
}

func TestJudgeResume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int64
		status int
		cr     []string
		length int64
		want   resumeVerdict
	}{
		{"no offset: written as it comes", 0, 200, nil, 10, resumeWrite},
		{"206 from the offset", 4, 206, []string{"bytes 4-9/10"}, 6, resumeWrite},
		{"206 from elsewhere", 4, 206, []string{"bytes 2-9/10"}, 8, resumeRefused},
		{"206 without Content-Range", 4, 206, nil, 6, resumeRefused},
		{"200: the server ignores ranges", 4, 200, nil, 10, resumeRefused},
		{"200 of the offset's length: already whole", 10, 200, nil, 10, resumeDone},
		{"200 of unknown length", 4, 200, nil, -1, resumeRefused},
		{"416 past the end", 10, 416, []string{"bytes */10"}, 3, resumeIgnore},
		{"503: not the part asked for", 4, 503, nil, 5, resumeRefused},
		{"Content-Range without start: the whole document", 4, 200, []string{"bytes */10"}, 10, resumeWrite},
		{"'bytes: N-' as some servers send it", 4, 206, []string{"bytes: 4-9/10"}, 6, resumeWrite},
		{"bare 'N-'", 4, 206, []string{"4-9/10"}, 6, resumeWrite},
		{"start too large for 64 bits", 4, 206, []string{"bytes 99999999999999999999-/10"}, 6, resumeRefused},
	} {
		if got := judgeResume(tc.offset, tc.status, tc.cr, tc.length); got != tc.want {
			t.Errorf("%s: judgeResume(%d, %d, %q, %d) = %d, want %d", tc.name, tc.offset, tc.status, tc.cr, tc.length, got, tc.want)
		}
	}
}

func FuzzParseContinueAt(f *testing.F) {
	for _, s := range []string{"-", "0", "+3", " 3", "-5", "3x", "9223372036854775808", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		offset, auto, err := parseContinueAt(s)
		if err != nil {
			return
		}
		if auto != (s == "-") || offset < 0 {
			t.Fatalf("parseContinueAt(%q) = %d, %v", s, offset, auto)
		}
	})
}

func FuzzContentRangeStart(f *testing.F) {
	for _, s := range []string{"bytes 4-9/10", "bytes */10", "bytes: 4-", "4-", "", "x", "bytes 99999999999999999999-"} {
		f.Add(s, int64(4))
	}
	f.Fuzz(func(t *testing.T, v string, offset int64) {
		start, ok := contentRangeStart(v)
		if ok && start < -1 {
			t.Fatalf("contentRangeStart(%q) = %d", v, start)
		}
		got := judgeResume(offset, 206, []string{v}, -1)
		if offset > 0 && ok && start == offset && got != resumeWrite {
			t.Fatalf("judgeResume(%d, 206, %q) = %d: a Content-Range from the offset is written", offset, v, got)
		}
	})
}

// TestKeepable: what came of an attempt is written before the attempt
// ends only when it is the part asked for, as it came, with no headers
// to go before it and no range of the user's to keep.
func TestKeepable(t *testing.T) {
	answer := func(status int, header ...string) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Add(header[i], header[i+1])
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	for _, tc := range []struct {
		name                     string
		ranged, include, decoded bool
		asked                    int64
		resp                     *http.Response
		want                     bool
	}{
		{name: "200 from 0", resp: answer(200), want: true},
		{name: "206 from 0", resp: answer(206, "Content-Range", "bytes 0-9/10")},
		{name: "200 with Content-Range from 0", resp: answer(200, "Content-Range", "bytes 0-9/10")},
		{name: "206 at the offset", asked: 4, resp: answer(206, "Content-Range", "bytes 4-9/10"), want: true},
		{name: "206 at another byte", asked: 4, resp: answer(206, "Content-Range", "bytes 2-9/10")},
		{name: "200 to a range", asked: 4, resp: answer(200)},
		{name: "503", asked: 4, resp: answer(503, "Content-Range", "bytes 4-9/10")},
		{name: "-H Range", ranged: true, resp: answer(200)},
		{name: "-i", include: true, resp: answer(200)},
		{name: "--compressed, gzip", decoded: true, resp: answer(200, "Content-Encoding", "gzip")},
		{name: "--compressed, not encoded", decoded: true, resp: answer(200), want: true},
		{name: "gzip without --compressed (written as it came)", resp: answer(200, "Content-Encoding", "gzip"), want: true},
	} {
		r := newResumeState(tc.asked, tc.ranged, tc.include, tc.decoded, false, "", io.Discard)
		if got := r.keepable(tc.asked, tc.resp); got != tc.want {
			t.Errorf("%s: keepable %v, want %v", tc.name, got, tc.want)
		}
	}
}
