package curl

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// writeOutStrings are the -w variables that %{json} writes as JSON
// strings, each with whether it is null when empty, as curl 7.88 writes
// them; the others are numbers.
var writeOutStrings = map[string]bool{
	"content_type":       true,
	"errormsg":           true,
	"filename_effective": true,
	"http_version":       false,
	"local_ip":           false,
	"method":             false,
	"redirect_url":       true,
	"referer":            true,
	"remote_ip":          false,
	"scheme":             true,
	"url":                false,
	"url_effective":      false,
}

// json is %{json}: every variable of writeOutVars in one JSON object,
// keys sorted, as curl writes it (curl also has variables yaoki http does
// not, such as certs and curl_version, and yaoki http has num_retries).
func (ti *transferInfo) json() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range slices.Sorted(maps.Keys(writeOutVars)) {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, name)
		b.WriteByte(':')
		v := writeOutVars[name](ti)
		if name == "http_code" || name == "response_code" {
			v = strconv.Itoa(ti.status) // a JSON number has no leading zeros: 0, not 000
		}
		nullable, isString := writeOutStrings[name]
		switch {
		case !isString:
			b.WriteString(v)
		case v == "" && nullable:
			b.WriteString("null")
		default:
			writeJSONString(&b, v)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONString writes s as a JSON string as curl quotes it: '"' and
// '\' escaped, control characters as \b \f \n \r \t or \u00XX, other
// bytes as they are.
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
				continue
			}
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
