// Package enum names the values of the toolkit's small enumerations (a
// uint8 type and its constants: backoff kinds, breaker states, event kinds,
// give-up reasons, ...) from one table per type, indexed by value. String
// methods and parsers read the same table, so a value and its name cannot
// drift apart, and every type reads its names the same way.
package enum

import (
	"fmt"
	"strings"
)

// Name returns the name of v in names, or unknown when v has no name (out
// of the table, or an empty entry). A "%d" in unknown is replaced by v:
// "Kind(%d)" gives "Kind(7)"; "unknown" is returned as it is. Name does not
// allocate for a named value.
func Name[T ~uint8](names []string, v T, unknown string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return other(unknown, uint8(v))
}

func other(unknown string, v uint8) string {
	if strings.Contains(unknown, "%d") {
		return fmt.Sprintf(unknown, v)
	}
	return unknown
}

// Parse returns the value named s in names, exactly as written.
func Parse[T ~uint8](names []string, s string) (T, bool) {
	return find[T](names, s, func(a, b string) bool { return a == b })
}

// ParseFold is Parse in any case ("FULL" names the value named "full").
func ParseFold[T ~uint8](names []string, s string) (T, bool) {
	return find[T](names, s, strings.EqualFold)
}

func find[T ~uint8](names []string, s string, same func(a, b string) bool) (T, bool) {
	for i, n := range names {
		if n != "" && same(n, s) {
			return T(i), true
		}
	}
	return 0, false
}

// List returns the names in value order, for an error that says what is
// accepted: "full, none, equal or decorrelated".
func List(names []string) string {
	var named []string
	for _, n := range names {
		if n != "" {
			named = append(named, n)
		}
	}
	if len(named) < 2 {
		return strings.Join(named, "")
	}
	return strings.Join(named[:len(named)-1], ", ") + " or " + named[len(named)-1]
}
