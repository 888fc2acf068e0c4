package policy

import (
	"errors"
	"fmt"
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

// budgetConfig decodes a Budget object: a share-of-traffic retry budget
// (package budget's Share). Absent fields take budget's defaults (20 % of
// requests over 10 s, with a floor of 10 retries per second).
func (d *decoder) budgetConfig(n *node, path string) *budget.ShareConfig {
	if n.kind != 'o' {
		d.fail(n.off, path, n.raw()+" is "+n.kindName()+`: want an object such as {"Ratio": 0.2, "WindowSeconds": 10, "MinPerSecond": 10} ({} for the defaults)`)
		return nil
	}
	c := &budget.ShareConfig{}
	ok := true
	for i, k := range n.keys {
		v, fp := n.vals[i], path+"."+k
		switch k {
		case "Ratio":
			c.Ratio, ok = d.number(v, fp, "want a share of the successful requests, such as 0.2")
		case "WindowSeconds":
			var f float64
			f, ok = d.number(v, fp, "want seconds, such as 10")
			c.Window = seconds(f)
		case "MinPerSecond":
			c.MinPerSecond, ok = d.number(v, fp, "want retries per second, such as 10, or -1 for no floor")
		default:
			d.unknown(n.koff[i], path, k, budgetFields, "Budget")
		}
		if !ok {
			return nil
		}
	}
	if _, err := budget.NewShare(*c); err != nil {
		d.fail(n.off, path, guardMsg(err))
		return nil
	}
	return c
}

// breakerConfig decodes a Breaker object (package breaker.Config).
// Absent fields take breaker's defaults (trips at 50 % failures over 30 s
// with at least 20 calls; open 30 s, doubling on re-trips up to 5 min).
func (d *decoder) breakerConfig(n *node, path string) *breaker.Config {
	if n.kind != 'o' {
		d.fail(n.off, path, n.raw()+" is "+n.kindName()+`: want an object such as {"FailureRatio": 0.5, "MinCalls": 20, "WindowSeconds": 30, "OpenSeconds": 30} ({} for the defaults)`)
		return nil
	}
	s := &breaker.Config{Name: "policy"}
	ok := true
	secs := func(v *node, fp string, dst *time.Duration) {
		var f float64
		f, ok = d.number(v, fp, "want seconds")
		*dst = seconds(f)
	}
	ints := func(v *node, fp string, dst *int) {
		var f float64
		f, ok = d.number(v, fp, "want an integer")
		if ok && (f != float64(int(f)) || f < -1e9 || f > 1e9) {
			d.fail(v.off, fp, v.raw()+" is not an integer in range: want an integer from 0 to 1e9")
			ok = false
		}
		*dst = int(f)
	}
	for i, k := range n.keys {
		v, fp := n.vals[i], path+"."+k
		switch k {
		case "FailureRatio":
			s.FailureRatio, ok = d.number(v, fp, "want a share of calls, such as 0.5")
		case "MinCalls":
			ints(v, fp, &s.MinCalls)
		case "WindowSeconds":
			secs(v, fp, &s.Window)
		case "ConsecutiveFailures":
			ints(v, fp, &s.ConsecutiveFailures)
		case "OpenSeconds":
			secs(v, fp, &s.OpenTimeout)
		case "MaxOpenSeconds":
			secs(v, fp, &s.MaxOpenTimeout)
		case "HalfOpenProbes":
			ints(v, fp, &s.HalfOpenProbes)
		case "RetriesOnly":
			if v.kind != 'b' {
				d.fail(v.off, fp, v.raw()+" is "+v.kindName()+": want true or false")
				ok = false
			}
			s.RetriesOnly = v.b
		default:
			d.unknown(n.koff[i], path, k, breakerFields, "Breaker")
		}
		if !ok {
			return nil
		}
	}
	if _, err := breaker.New(*s); err != nil {
		d.fail(n.off, path, guardMsg(err))
		return nil
	}
	return s
}

// guardMsg turns a budget or breaker configuration error into the
// document's words: its Go field names become the document's.
func guardMsg(err error) string {
	var ce *configerr.Error
	if !errors.As(err, &ce) {
		return err.Error()
	}
	msg := fmt.Sprintf("%s %v out of range: want %s", ce.Field, ce.Value, ce.Want)
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
		if _, err := budget.NewShare(*d.Budget); err != nil {
			bad("Budget", guardMsg(err))
		}
	}
	if d.Breaker != nil {
		if _, err := breaker.New(*d.Breaker); err != nil {
			bad("Breaker", guardMsg(err))
		}
	}
}
