package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yaoki-go/yaoki/breaker"
	"github.com/yaoki-go/yaoki/budget"
	"github.com/yaoki-go/yaoki/internal/configerr"
)

// Fields of the Budget and Breaker objects of a document.
var (
	budgetFields  = []string{"Ratio", "WindowSeconds", "MinPerSecond"}
	breakerFields = []string{"FailureRatio", "MinCalls", "WindowSeconds", "ConsecutiveFailures", "OpenSeconds", "MaxOpenSeconds", "HalfOpenProbes", "RetriesOnly"}
)

// guardObject decodes a Budget or Breaker object (named name in messages)
// into c: field reads the value v of one of fields, at path fp, and
// returns false when it refused it (the message is written); check builds
// the guard, to refuse a configuration out of range. Unknown fields are
// reported and skipped. It returns nil when anything was refused.
func guardObject[C any](d *decoder, n *node, path, name, example string, fields []string, c *C,
	field func(k string, v *node, fp string) bool, check func(C) error) *C {
	if n.kind != 'o' {
		d.fail(n.off, path, n.found()+": want an object such as "+example+" ({} for the defaults)")
		return nil
	}
	if !d.fields(n, path, name, fields, field) {
		return nil
	}
	if err := check(*c); err != nil {
		// At the field out of range, with the value as written, when the
		// document has it; at the object when the value is a default or
		// two fields disagree.
		off, at, msg := n.off, path, guardMsg(err)
		var ce *configerr.Error
		if errors.As(err, &ce) {
			if i := slices.Index(n.keys, guardField(ce.Field)); i >= 0 {
				v := n.vals[i]
				off, at, msg = v.off, path+"."+n.keys[i], v.raw()+" out of range: want "+docWords(ce.Want)
			}
		}
		d.fail(off, at, msg)
		return nil
	}
	return c
}

// guardField returns the document's name of a field of budget.ShareConfig
// or breaker.Config, as a configuration error names it
// ("ShareConfig.Window", "OpenTimeout").
func guardField(goField string) string {
	switch f := strings.TrimPrefix(goField, "ShareConfig."); f {
	case "Window":
		return "WindowSeconds"
	case "OpenTimeout":
		return "OpenSeconds"
	case "MaxOpenTimeout":
		return "MaxOpenSeconds"
	default:
		return f
	}
}

// checkBudget and checkBreaker refuse what budget.NewShare and breaker.New
// refuse.
func checkBudget(c budget.ShareConfig) error { _, err := budget.NewShare(c); return err }
func checkBreaker(c breaker.Config) error    { _, err := breaker.New(c); return err }

// budgetConfig decodes a Budget object: a share-of-traffic retry budget
// (package budget's Share). Absent fields take budget's defaults (20 % of
// requests over 10 s, with a floor of 10 retries per second; shared by a
// fleet in yaoki proxy --redis, the fleet's floor of 1 per second).
func (d *decoder) budgetConfig(n *node, path string) *budget.ShareConfig {
	c := &budget.ShareConfig{}
	return guardObject(d, n, path, "Budget", `{"Ratio": 0.2, "WindowSeconds": 10, "MinPerSecond": 10}`, budgetFields, c,
		func(k string, v *node, fp string) (ok bool) {
			switch k {
			case "Ratio":
				c.Ratio, ok = d.number(v, fp, "want a share of the successful requests, such as 0.2")
			case "WindowSeconds":
				var f float64
				f, ok = d.number(v, fp, "want seconds, such as 10")
				ok = ok && d.keepsSeconds(v, fp, f, "want seconds, such as 10")
				c.Window = seconds(f)
			case "MinPerSecond":
				c.MinPerSecond, ok = d.number(v, fp, "want retries per second, such as 10, or -1 for no floor")
			}
			return ok
		}, checkBudget)
}

// breakerConfig decodes a Breaker object (package breaker.Config).
// Absent fields take breaker's defaults (trips at 50 % failures over 30 s
// with at least 20 calls; open 30 s, doubling on re-trips up to 5 min).
func (d *decoder) breakerConfig(n *node, path string) *breaker.Config {
	s := &breaker.Config{Name: "policy"}
	durations := map[string]*time.Duration{"WindowSeconds": &s.Window, "OpenSeconds": &s.OpenTimeout, "MaxOpenSeconds": &s.MaxOpenTimeout}
	integers := map[string]*int{"MinCalls": &s.MinCalls, "ConsecutiveFailures": &s.ConsecutiveFailures, "HalfOpenProbes": &s.HalfOpenProbes}
	return guardObject(d, n, path, "Breaker", `{"FailureRatio": 0.5, "MinCalls": 20, "WindowSeconds": 30, "OpenSeconds": 30}`, breakerFields, s,
		func(k string, v *node, fp string) (ok bool) {
			if dst, found := durations[k]; found {
				var f float64
				f, ok = d.number(v, fp, "want seconds")
				ok = ok && d.keepsSeconds(v, fp, f, "want seconds")
				*dst = seconds(f)
				return ok
			}
			if dst, found := integers[k]; found {
				var f float64
				f, ok = d.number(v, fp, "want an integer")
				if ok && (f != float64(int(f)) || f < -1e9 || f > 1e9) {
					d.fail(v.off, fp, v.raw()+" is not an integer in range: want an integer from 0 to 1e9")
					return false
				}
				*dst = int(f)
				return ok
			}
			switch k {
			case "FailureRatio":
				s.FailureRatio, ok = d.number(v, fp, "want a share of calls, such as 0.5")
			case "RetriesOnly":
				s.RetriesOnly, ok = v.b, v.kind == 'b'
				if !ok {
					d.fail(v.off, fp, v.found()+": want true or false")
				}
			}
			return ok
		}, checkBreaker)
}

// guardMsg turns a budget or breaker configuration error into the
// document's words: its Go field names become the document's.
func guardMsg(err error) string {
	var ce *configerr.Error
	if !errors.As(err, &ce) {
		return err.Error()
	}
	return docWords(fmt.Sprintf("%s %v out of range: want %s", ce.Field, ce.Value, ce.Want))
}

// docWords writes the Go field names of budget and breaker in a message
// as the document's.
func docWords(msg string) string {
	for _, r := range [][2]string{
		{"ShareConfig.", ""}, {"OpenTimeout", "OpenSeconds"}, {"Window ", "WindowSeconds "},
	} {
		msg = strings.ReplaceAll(msg, r[0], r[1])
	}
	return msg
}

// validateGuards is Validate's part for Budget and Breaker.
func (d *Document) validateGuards(bad func(path, msg string)) {
	if d.Budget != nil {
		if err := checkBudget(*d.Budget); err != nil {
			bad("Budget", guardMsg(err))
		}
	}
	if d.Breaker != nil {
		if err := checkBreaker(*d.Breaker); err != nil {
			bad("Breaker", guardMsg(err))
		}
	}
}
