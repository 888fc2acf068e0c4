package curl

import (
	"os"
	"path/filepath"
	"strings"
)

// netrcLogin returns the login and password that the netrc text gives
// for host, as curl 7.88 reads the file: whitespace-separated tokens,
// "machine NAME" (its name compared without case) or "default" starting
// an entry, "login" and "password" in it ("quoted" values may hold
// spaces, \" and \\), "macdef" skipped to the next empty line; the first
// entry of host wins, the default entry when none names it.
func netrcLogin(text, host string) (login, password string, ok bool) {
	type entry struct{ login, password string }
	var found, dflt *entry
	var cur *entry
	toks := netrcTokens(text)
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "machine":
			cur = nil
			if i+1 < len(toks) {
				i++
				if found == nil && strings.EqualFold(toks[i], host) {
					found = &entry{}
					cur = found
				}
			}
		case "default":
			cur = nil
			if dflt == nil {
				dflt = &entry{}
				cur = dflt
			}
		case "login", "password", "account":
			if i+1 < len(toks) {
				i++
				if cur != nil && toks[i-1] == "login" {
					cur.login = toks[i]
				} else if cur != nil && toks[i-1] == "password" {
					cur.password = toks[i]
				}
			}
		}
	}
	e := found
	if e == nil {
		e = dflt
	}
	if e == nil || e.login == "" && e.password == "" {
		return "", "", false
	}
	return e.login, e.password, true
}

// netrcTokens splits netrc text into its tokens, macdef bodies left out.
func netrcTokens(text string) []string {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '"':
			var b strings.Builder
			i++
			for i < len(text) && text[i] != '"' {
				if text[i] == '\\' && i+1 < len(text) {
					i++
				}
				b.WriteByte(text[i])
				i++
			}
			i++
			toks = append(toks, b.String())
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \t\r\n", rune(text[j])) {
				j++
			}
			toks = append(toks, text[i:j])
			i = j
			if toks[len(toks)-1] == "macdef" {
				if k := strings.Index(text[i:], "\n\n"); k >= 0 {
					i += k + 2
				} else {
					i = len(text)
				}
			}
		}
	}
	return toks
}

// applyNetrc sets -u from the netrc file that -n ($HOME/.netrc),
// --netrc-file or --netrc-optional name, for host, when -u gives no
// credentials; a file that cannot be read gives none, as curl.
func (o *httpOptions) applyNetrc(host string) {
	if o.user != "" || !o.netrc && !o.netrcOptional && o.netrcFile == "" {
		return
	}
	path := o.netrcFile
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return
		}
		path = filepath.Join(home, ".netrc")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if login, password, ok := netrcLogin(string(b), host); ok {
		o.user = login + ":" + password
	}
}
