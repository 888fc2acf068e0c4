package otel_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yaoki-go/yaoki/event"
	"github.com/yaoki-go/yaoki/hedge"
	yotel "github.com/yaoki-go/yaoki/otel"
	"github.com/yaoki-go/yaoki/retry"
)

// notCounted are the kinds no instrument counts, as Observer.Observe says.
var notCounted = map[event.Kind]bool{event.AttemptStart: true}

// kinds returns every event.Kind, found by asking each value for its name:
// a kind added to package event is in it without a word here.
func kinds() []event.Kind {
	var out []event.Kind
	for k := event.Kind(1); k != 0; k++ {
		if !strings.HasPrefix(k.String(), "kind_") {
			out = append(out, k)
		}
	}
	return out
}

// TestEveryKindCounted: an event of every kind but AttemptStart reaches at
// least one instrument, and everyEvent (which TestDocumentedMetrics and the
// deploy tests scrape) holds every kind, so that a kind added to package
// event is not dropped by the Observer, nor missing from the checks of the
// docs, without a test failing.
func TestEveryKindCounted(t *testing.T) {
	listed := map[event.Kind]bool{}
	for _, e := range everyEventList {
		listed[e.Kind] = true
	}
	for _, k := range kinds() {
		if !listed[k] {
			t.Errorf("everyEvent has no %s event: add one, with the fields its reporters set", k)
		}
		o, collect := newObserver(t)
		e := event.Event{Kind: k, Component: "retry", Name: "n", Attempt: 1, Outcome: event.Failure, Source: event.Backoff,
			Reason: "attempts_exhausted", From: event.StateClosed, To: event.StateOpen, Status: 503}
		o.Observe(context.Background(), e)
		got := 0
		for name, points := range collect() {
			if name != yotel.MetricBreakerState {
				got += len(points)
			}
		}
		switch {
		case notCounted[k] && got != 0:
			t.Errorf("%s: %d points recorded, want none (the docs say it is not counted)", k, got)
		case !notCounted[k] && got == 0:
			t.Errorf("%s: no instrument counts it: Observer.Observe drops it", k)
		}
	}
}

// docValues returns, for the row of attribute attr in the attribute
// table of docs/observability.md, the values it lists in backquotes, by
// the metric its segments name ("give-ups: ...; rejections: ..."), or
// under "" when it has no such segments.
func docValues(t *testing.T, attr string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	prefix := "| `" + attr + "`"
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		cells := strings.Split(line, " | ")
		out := map[string][]string{}
		word := regexp.MustCompile("`([a-z0-9_]+)`")
		segment := regexp.MustCompile(`^\s*([a-z-]+): `)
		for _, seg := range strings.Split(cells[len(cells)-1], ";") {
			name := ""
			if m := segment.FindStringSubmatch(seg); m != nil {
				name = m[1]
			}
			for _, m := range word.FindAllStringSubmatch(seg, -1) {
				out[name] = append(out[name], m[1])
			}
		}
		return out
	}
	t.Fatalf("docs/observability.md: no row for %s in the attribute table", attr)
	return nil
}

// sameSet reports the values of got missing from doc and those doc lists
// that got does not have.
func sameSet(t *testing.T, what string, got, doc []string) {
	t.Helper()
	slices.Sort(got)
	got = slices.Compact(got)
	for _, v := range got {
		if !slices.Contains(doc, v) {
			t.Errorf("%s: %q is emitted but docs/observability.md does not list it (it lists %v)", what, v, doc)
		}
	}
	for _, v := range doc {
		if !slices.Contains(got, v) {
			t.Errorf("%s: docs/observability.md lists %q, which nothing emits (emitted: %v)", what, v, got)
		}
	}
}

// goSource is the toolkit's Go code outside tests, parsed: each package
// directory under the repository's root, nested modules included.
type goSource map[string][]*ast.File

func parseSource(t *testing.T) goSource {
	t.Helper()
	src := goSource{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		src[dir] = append(src[dir], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func literal(e ast.Expr) (string, bool) {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
		s, err := strconv.Unquote(l.Value)
		return s, err == nil
	}
	return "", false
}

// consts returns the string constants of package dir whose names start
// with prefix, by name.
func (src goSource) consts(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range src[dir] {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) && strings.HasPrefix(n.Name, prefix) {
						if v, ok := literal(vs.Values[i]); ok {
							out[n.Name] = v
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no string constant %s…", dir, prefix)
	}
	return out
}

// assigned returns the strings that the code of the packages dirs (all
// of them for none) gives to a field called field, in a composite literal
// (Field: "x") or an assignment (v.Field = "x"), and those that a function
// called fn returns: literals, or the package's string constants; ""
// (none) is left out.
func (src goSource) assigned(field, fn string, dirs ...string) []string {
	var out []string
	for dir, files := range src {
		if len(dirs) > 0 && !slices.Contains(dirs, dir) {
			continue
		}
		consts := map[string]string{}
		for _, f := range files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, s := range g.Specs {
						vs := s.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								if v, ok := literal(vs.Values[i]); ok {
									consts[n.Name] = v
								}
							}
						}
					}
				}
			}
		}
		literal := func(e ast.Expr) (string, bool) {
			if id, ok := e.(*ast.Ident); ok {
				v, ok := consts[id.Name]
				return v, ok
			}
			return literal(e)
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.KeyValueExpr:
					if k, ok := x.Key.(*ast.Ident); ok && k.Name == field {
						if v, ok := literal(x.Value); ok && v != "" {
							out = append(out, v)
						}
					}
				case *ast.AssignStmt:
					for i, l := range x.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == field && i < len(x.Rhs) {
							if v, ok := literal(x.Rhs[i]); ok && v != "" {
								out = append(out, v)
							}
						}
					}
				case *ast.FuncDecl:
					if x.Name.Name == fn && x.Body != nil {
						ast.Inspect(x.Body, func(n ast.Node) bool {
							if r, ok := n.(*ast.ReturnStmt); ok {
								for _, e := range r.Results {
									if v, ok := literal(e); ok && v != "" {
										out = append(out, v)
									}
								}
							}
							return true
						})
					}
				}
				return true
			})
		}
	}
	return out
}

// TestEveryValueDocumented holds the attribute table of
// docs/observability.md to the values the toolkit emits, walked rather
// than listed: the reasons of retry.Reason (every value), the Reason
// constants of packages idempotency and deadletter and the reasons
// httpretry and deadletter write as literals (from their source), yaoki
// proxy's reason constants, the hedge refusals, every event.Source and event.Outcome, and every
// Component the code writes. A value added anywhere fails this test until
// the docs list it; a value the docs list that nothing emits fails it too.
// Each value is then recorded, to check that the Observer passes it on.
func TestEveryValueDocumented(t *testing.T) {
	src := parseSource(t)

	var retryReasons []string
	for r := retry.Reason(1); r != 0; r++ {
		if !strings.HasPrefix(r.String(), "Reason(") {
			retryReasons = append(retryReasons, r.Key())
		}
	}
	// httpretry's final reasons: the literals given to call.final and
	// those reasonKey returns.
	httpReasons := src.assigned("final", "reasonKey", "../httpretry")
	if len(httpReasons) < 3 {
		t.Fatalf("httpretry: found the final reasons %v, want not_idempotent, body_not_replayable, do_not_retry", httpReasons)
	}
	// A refused hedge's reason: "hedge_" and the Hedger's error after
	// "hedge: ", up to its first comma, in snake case (retry.Hedger).
	var hedgeReasons []string
	for _, err := range []error{hedge.ErrBudget, hedge.ErrBrownout} {
		msg, _ := strings.CutPrefix(err.Error(), "hedge: ")
		msg, _, _ = strings.Cut(msg, ",")
		hedgeReasons = append(hedgeReasons, "hedge_"+strings.NewReplacer(" ", "_", "-", "_").Replace(msg))
	}
	var conflicts []string
	for _, v := range src.consts(t, "../idempotency", "Reason") {
		conflicts = append(conflicts, v)
	}
	// A redrive's event carries the letter's reason after it, in snake
	// case, or a literal (lease_lost). ReasonLeaseEnded is what
	// Store.Claim writes for a claim that ended with its lease; the
	// redrive that follows replaces it before its event.
	var redrives []string
	for _, v := range src.consts(t, "../deadletter", "Reason") {
		redrives = append(redrives, v)
	}
	redrives = append(redrives, src.assigned("Reason", "", "../deadletter")...)
	for i, v := range redrives {
		redrives[i] = strings.ReplaceAll(v, " ", "_")
	}
	redrives = slices.DeleteFunc(redrives, func(v string) bool { return v == "lease_ended" })

	// The reasons the retry loop gives its events besides its give-ups'
	// (Reason.Key() calls, which are not literals): a bulkhead's wait.
	waits := src.assigned("Reason", "", "../retry")

	// yaoki proxy's give-ups of an answer cut after its header: its
	// reason constants.
	var proxyReasons []string
	for _, v := range src.consts(t, "../cmd/yaoki/internal/proxy", "reason") {
		proxyReasons = append(proxyReasons, v)
	}

	key := func(r retry.Reason) string { return r.Key() }
	reasons := docValues(t, event.AttrReason)
	sameSet(t, "give-ups", slices.Concat(retryReasons, httpReasons, proxyReasons), reasons["give-ups"])
	// The loop's refusals (Before, Acquired, After's budget), and the
	// reasons HedgeValue gives a hedge it does not send.
	rejections := []string{key(retry.ReasonBudgetExhausted), key(retry.ReasonBreakerOpen), key(retry.ReasonRejectedLocally),
		key(retry.ReasonDeadline), key(retry.ReasonExhausted), key(retry.ReasonOuterLayer)}
	sameSet(t, "rejections", append(rejections, hedgeReasons...), reasons["rejections"])
	sameSet(t, "waits", waits, reasons["waits"])
	sameSet(t, "conflicts", conflicts, reasons["conflicts"])
	sameSet(t, "redrives", redrives, reasons["redrives"])

	var sources, outcomes []string
	for s := event.Source(1); s.String() != "unknown"; s++ {
		sources = append(sources, s.String())
	}
	for o := event.Outcome(1); o.String() != "unknown"; o++ {
		outcomes = append(outcomes, o.String())
	}
	sameSet(t, "sources", sources, docValues(t, event.AttrWaitSource)[""])
	sameSet(t, "outcomes", outcomes, docValues(t, event.AttrOutcome)[""])
	components := src.assigned("Component", "")
	comp := docValues(t, event.AttrComponent)[""]
	sameSet(t, "components", components, comp)

	// Each value reaches its instrument as it is.
	o, collect := newObserver(t)
	ctx := context.Background()
	for _, r := range reasons["give-ups"] {
		o.Observe(ctx, event.Event{Kind: event.GaveUp, Component: "retry", Reason: r})
	}
	for _, r := range reasons["rejections"] {
		o.Observe(ctx, event.Event{Kind: event.HedgeRefused, Component: "retry", Reason: r})
	}
	for _, r := range reasons["conflicts"] {
		o.Observe(ctx, event.Event{Kind: event.Conflict, Component: "idempotency", Reason: r})
	}
	for _, r := range reasons["waits"] {
		o.Observe(ctx, event.Event{Kind: event.RetryScheduled, Component: "retry", Source: event.RateLimit, Reason: r})
	}
	for _, r := range reasons["redrives"] {
		o.Observe(ctx, event.Event{Kind: event.Redrive, Component: "deadletter", Outcome: event.Failure, Reason: r})
	}
	for s := event.Source(1); s.String() != "unknown"; s++ {
		o.Observe(ctx, event.Event{Kind: event.RetryScheduled, Component: "retry", Source: s})
	}
	for oc := event.Outcome(1); oc.String() != "unknown"; oc++ {
		o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Component: "retry", Outcome: oc})
	}
	for _, c := range comp {
		o.Observe(ctx, event.Event{Kind: event.AttemptEnd, Component: c, Outcome: event.Success})
	}
	s := collect()
	has := func(metric, attr, v string) {
		t.Helper()
		for k := range s[metric] {
			if slices.Contains(strings.Split(k, ","), attr+"="+v) {
				return
			}
		}
		t.Errorf("%s has no series with %s=%s", metric, attr, v)
	}
	for _, r := range reasons["give-ups"] {
		has(yotel.MetricGiveUps, event.AttrReason, r)
	}
	for _, r := range reasons["rejections"] {
		has(yotel.MetricRejections, event.AttrReason, r)
	}
	for _, r := range reasons["conflicts"] {
		has(yotel.MetricConflicts, event.AttrReason, r)
	}
	for _, r := range reasons["waits"] {
		has(yotel.MetricRetryWait, event.AttrReason, r)
	}
	for _, r := range reasons["redrives"] {
		has(yotel.MetricRedrives, event.AttrReason, r)
	}
	for _, v := range sources {
		has(yotel.MetricRetryWait, event.AttrWaitSource, v)
	}
	for _, v := range outcomes {
		has(yotel.MetricAttempts, event.AttrOutcome, v)
	}
	for _, v := range comp {
		has(yotel.MetricAttempts, event.AttrComponent, v)
	}
}
