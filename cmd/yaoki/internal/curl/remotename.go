package curl

import (
	"net/http"
	"os"
	"strings"
)

// dispositionName returns the file name that a Content-Disposition value
// gives, as curl 7.88 reads it for -J: the value of its first
// "filename=" parameter (quoted or up to the next ';' or blank; the
// encoded "filename*=" is not read), cut to what follows its last '/' or
// '\', so that a server cannot name a file outside the folder; "" for
// none.
func dispositionName(v string) string {
	for p := v; p != ""; {
		i := strings.IndexFunc(p, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
		if i < 0 {
			return ""
		}
		p = p[i:]
		if !strings.HasPrefix(p, "filename=") {
			j := strings.IndexByte(p, ';')
			if j < 0 {
				return ""
			}
			p = p[j+1:]
			continue
		}
		p = p[len("filename="):]
		var name string
		if strings.HasPrefix(p, `"`) {
			name, _, _ = strings.Cut(p[1:], `"`)
		} else {
			name = p
			if j := strings.IndexAny(p, "; \t\r\n"); j >= 0 {
				name = p[:j]
			}
		}
		if j := strings.LastIndexAny(name, `/\`); j >= 0 {
			name = name[j+1:]
		}
		return name
	}
	return ""
}

// nameFromHeader makes -OJ's file the one the final answer's
// Content-Disposition names, in --output-dir when given; it keeps -O's
// name when the answer names none.
func (o *httpOptions) nameFromHeader(resp *http.Response) {
	if !o.headerName || !o.remoteName || resp == nil {
		return
	}
	name := dispositionName(resp.Header.Get("Content-Disposition"))
	if name == "" {
		return
	}
	path := name
	if o.outputDir != "" {
		path = strings.TrimSuffix(o.outputDir, "/") + "/" + name
	}
	o.output, o.namedByServer, o.serverName = path, true, name
}

// effectiveFilename is %{filename_effective}: -o's or -O's file, or as
// curl 7.88 writes it for -J's, the name the answer gave, without
// --output-dir.
func (o *httpOptions) effectiveFilename() string {
	if o.namedByServer {
		return o.serverName
	}
	return o.output
}

// createNew makes the file at path, refusing one that is there: curl
// never writes over a file that a server named.
func createNew(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
}
