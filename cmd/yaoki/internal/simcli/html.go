package simcli

import (
	"html/template"
	"io"
)

var simPage = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>yaoki sim report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
figure { margin: 1.5rem 0; } figure img { width: 100%; max-width: 46rem; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9rem; }
table { border-collapse: collapse; font-size: .85rem; margin: .5rem 0 1.5rem; }
th, td { padding: .2rem .6rem; text-align: right; border-bottom: 1px solid #eee; }
th:first-child, td:first-child { text-align: left; }
caption { text-align: left; font-weight: 600; padding-bottom: .3rem; }
dl.policies dt { font-weight: 600; } dl.policies dd { margin: 0 0 .5rem 1rem; color: #444; }
code { background: #f4f4f4; padding: .1rem .3rem; }
</style>
</head>
<body>
<h1>yaoki sim</h1>
<p>Made by <code>{{.Command}}</code> (seed {{.Seed}}; simulated in {{printf "%.1f" .Elapsed.Seconds}} s).
The numbers are in <a href="results.csv">results.csv</a> and <a href="results.json">results.json</a>.</p>
{{range .Sections}}
<h2>{{.Title}}</h2>
<p>{{.About}}</p>
<dl class="policies">{{range .Policies}}<dt>{{.Name}}</dt><dd>{{.Description}}</dd>{{end}}</dl>
{{range .Figures}}<figure><a href="{{.File}}.png"><img src="{{.File}}.svg" alt="{{.Title}}"></a><figcaption>{{.Caption}} (<a href="{{.File}}.png">PNG</a>, <a href="{{.File}}.svg">SVG</a>)</figcaption></figure>
{{end}}
{{range .Tables}}<table><caption>{{.Title}}</caption>
<tr><th>{{.Corner}}</th>{{range .Policies}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
{{end}}
</body>
</html>
`))

type htmlFigure struct{ File, Title, Caption string }

type htmlTable struct {
	Title, Corner string
	Policies      []string
	Rows          [][]string
}

type htmlSection struct {
	Title, About string
	Policies     []policyInfo
	Figures      []htmlFigure
	Tables       []htmlTable
}

var sectionAbout = map[string]string{
	"herd":      `Clients contend for one row under optimistic concurrency, all starting at once (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015). Each reads the version and writes with it; the write succeeds if no one wrote in between. Fewer calls is less work for the server; less time is sooner done.`,
	"outage":    `A server fails each attempt with probability p and has no capacity limit (Marc Brooker, "Fixing retries with token buckets and circuit breakers", 2022). A policy buys success with load: the ideal is high success at low p and little extra load at high p.`,
	"tail":      `Requests fan out to many backends and wait for the slowest; a small share of slow answers makes most requests slow (Dean and Barroso, "The Tail at Scale", CACM 2013). A hedged call sends a copy when its first attempt has not answered after a delay and takes the first answer. During the brownout every answer is slow: no copy helps, and naive hedging only adds load. The model gives naive hedging its best case (copies are independent, the backends have no queue); on a real struggling dependency the added load would slow every call.`,
	"ratelimit": `An API behind a fixed-window rate limiter admits a fixed number of attempts per window and answers the others 429 with Retry-After set to the whole seconds left in the window, rounded down as a server that writes delay-seconds truncates them (up with --round-up): rounded down, a window of 1 s always says "Retry-After: 0". A client that reads 0 as a wait of 0 sends its retry into the window that has just refused it, which is still full; a backoff moves it to a later window, where the arrivals' variance often left room. Above the limit (load over 1) no policy can succeed on more than the limit lets through: what differs there is the load the retries add, which a budget bounds.`,
	"collapse":  `A server slows down with the work in flight and never cancels it; clients time out and retry. A short trigger pushes it over: once answers take longer than the timeout, the retries alone can keep it down (a metastable failure).`,
}

// writeHTML writes index.html: every figure of figs, then the tables.
func (r *simReport) writeHTML(w io.Writer, figs []*figure) error {
	byPrefix := func(prefix string) []htmlFigure {
		var out []htmlFigure
		for _, f := range figs {
			if len(f.file) > len(prefix) && f.file[:len(prefix)+1] == prefix+"-" {
				out = append(out, htmlFigure{f.file, f.title, f.caption})
			}
		}
		return out
	}
	tables := r.tables()
	tablesOf := func(prefix string) []htmlTable {
		var out []htmlTable
		for _, t := range tables {
			if len(t.title) <= len(prefix) || t.title[:len(prefix)+1] != prefix+":" {
				continue
			}
			ht := htmlTable{Title: t.title, Corner: t.corner, Policies: t.policies}
			for _, row := range t.rows {
				cells := []string{row}
				for _, p := range t.policies {
					cells = append(cells, t.cells[[2]string{row, p}])
				}
				ht.Rows = append(ht.Rows, cells)
			}
			out = append(out, ht)
		}
		return out
	}
	var sections []htmlSection
	add := func(key, title string, ps []policyInfo) {
		sections = append(sections, htmlSection{Title: title, About: sectionAbout[key], Policies: ps, Figures: byPrefix(key), Tables: tablesOf(key)})
	}
	if r.Herd != nil {
		add("herd", "Herd", r.Herd.Policies)
	}
	if r.Outage != nil {
		add("outage", "Outage", r.Outage.Policies)
	}
	if r.Collapse != nil {
		add("collapse", "Collapse", r.Collapse.Policies)
	}
	if r.Tail != nil {
		add("tail", "Tail", r.Tail.Policies)
	}
	if r.RateLimit != nil {
		add("ratelimit", "Rate limit", r.RateLimit.Policies)
	}
	return simPage.Execute(w, struct {
		*simReport
		Sections []htmlSection
	}{r, sections})
}
