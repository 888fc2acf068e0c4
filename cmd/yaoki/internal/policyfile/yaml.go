package policyfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAMLToJSON converts a YAML policy document to the JSON form that package
// policy reads. It writes each value on the line (and, where it can, at the
// column) where it stands in the YAML file, so that the positions in
// policy's errors point into the YAML file. Keys keep their order;
// anchors and aliases are expanded.
//
// A file holds one YAML document: a second one (after ---) is refused, not
// ignored. Aliases may stand for at most maxAliasValues values in all, so
// that a file of aliases of aliases (a "billion laughs") is refused before
// it is expanded.
func YAMLToJSON(data []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the document is empty")
		}
		return nil, fmt.Errorf("invalid YAML: %v%s", strings.TrimPrefix(err.Error(), "yaml: "), tabHint(data, err))
	}
	if root.Kind == 0 {
		return nil, fmt.Errorf("the document is empty")
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("invalid YAML after the first document: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	default:
		return nil, fmt.Errorf("line %d: a second YAML document (after ---): a policy file holds one document", next.Line)
	}
	w := &jsonWriter{line: 1, col: 1}
	if err := w.node(&root, 0); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// yamlLine finds the line number that a YAML parse error names.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+):`)

// tabHint explains a parse error on a line indented with a tab, which YAML
// does not allow and whose parser says only that it "found character that
// cannot start any token".
func tabHint(data []byte, err error) string {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	line := lines[n-1]
	if indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]; strings.Contains(indent, "\t") {
		return fmt.Sprintf(" (line %d is indented with a tab: YAML indents with spaces only)", n)
	}
	return ""
}

// NodeToJSON writes a YAML subtree as JSON with each value on its line
// (and, where it can, column) of the YAML file, so that the positions in
// package policy's errors point into the YAML file.
func NodeToJSON(n *yaml.Node) ([]byte, error) {
	w := &jsonWriter{line: 1, col: 1}
	if err := w.node(n, 0); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// maxAliasValues bounds the values that aliases stand for in one
// document, counted each time an alias is used: a policy needs a few, and
// nine levels of aliases used ten times each stand for a billion.
const maxAliasValues = 10000

// jsonWriter writes JSON, keeping track of the line and column it is at.
type jsonWriter struct {
	buf       bytes.Buffer
	line, col int
	inAlias   int // aliases being expanded around the current node
	aliased   int // values written for aliases so far
}

// moveTo pads with newlines and spaces so that the next byte lands at
// (line, col), if that is not behind the current position.
func (w *jsonWriter) moveTo(line, col int) {
	for w.line < line {
		w.buf.WriteByte('\n')
		w.line++
		w.col = 1
	}
	if w.line == line {
		for w.col < col {
			w.buf.WriteByte(' ')
			w.col++
		}
	}
}

func (w *jsonWriter) write(s string) {
	w.buf.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		w.line += strings.Count(s, "\n")
		w.col = len(s) - i
	} else {
		w.col += len(s)
	}
}

func (w *jsonWriter) node(n *yaml.Node, depth int) error {
	if depth > 64 {
		return fmt.Errorf("line %d: the document is nested too deeply", n.Line)
	}
	if w.inAlias > 0 {
		if w.aliased++; w.aliased > maxAliasValues {
			return fmt.Errorf("line %d: aliases stand for more than %d values: a policy needs far fewer; write the values out or use fewer aliases of aliases", n.Line, maxAliasValues)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return fmt.Errorf("the document is empty")
		}
		return w.node(n.Content[0], depth+1)
	case yaml.AliasNode:
		w.inAlias++
		defer func() { w.inAlias-- }()
		return w.node(n.Alias, depth+1)
	case yaml.MappingNode:
		w.moveTo(n.Line, n.Column)
		w.write("{")
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key must be a plain name", k.Line)
			}
			if k.Value == "<<" {
				return fmt.Errorf("line %d: merge keys (<<) are not supported in policy files", k.Line)
			}
			if i > 0 {
				w.write(",")
			}
			// Keys go on their own line but not their column: quoted, they
			// are longer than in YAML, and the value's column matters more.
			w.moveTo(k.Line, 1)
			w.write(quote(k.Value))
			w.write(":")
			if err := w.node(v, depth+1); err != nil {
				return err
			}
		}
		w.write("}")
	case yaml.SequenceNode:
		w.moveTo(n.Line, n.Column)
		w.write("[")
		for i, e := range n.Content {
			if i > 0 {
				w.write(",")
			}
			if err := w.node(e, depth+1); err != nil {
				return err
			}
		}
		w.write("]")
	case yaml.ScalarNode:
		v, err := scalar(n)
		if err != nil {
			return err
		}
		w.moveTo(n.Line, n.Column)
		w.write(v)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

// scalar renders a YAML scalar as JSON: numbers, booleans and null by their
// resolved tag, everything else as a string. An integer is the number it
// stands for in YAML (0x10 is 16, 0o17 is 15); .inf and .nan, which JSON
// cannot hold, are refused.
func scalar(n *yaml.Node) (string, error) {
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return strconv.FormatInt(i, 10), nil
		}
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil {
			return number(f), nil // beyond int64: policy refuses it as out of range
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return "", fmt.Errorf("line %d: %s is not a finite number: write a number such as 2.5", n.Line, n.Value)
			}
			if mant, _, _ := strings.Cut(strings.ToLower(n.Value), "e"); f == 0 && strings.ContainsAny(mant, "123456789") {
				// 1e-400 decodes as 0, which policy would read as "at
				// once", "never" or a default; it refuses the same
				// number written in JSON.
				return "", fmt.Errorf("line %d: %s is too small to be told from 0: write 0 or a larger number", n.Line, n.Value)
			}
			return number(f), nil
		}
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return strconv.FormatBool(b), nil
		}
	case "!!null":
		return "null", nil
	}
	return quote(n.Value), nil
}

func number(f float64) string {
	b, _ := json.Marshal(f) // f is finite
	return string(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
