package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is a check's verdict.
type Status string

// The verdicts. XFail is a failure listed in the expected-failures
// baseline; XPass a listed check that passed (the baseline is stale).
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Skip  Status = "skip"
	XFail Status = "xfail"
	XPass Status = "xpass"
)

// Result is the outcome of one check.
type Result struct {
	ID       string        `json:"id"`
	Level    Level         `json:"level"`
	Source   Source        `json:"source"`
	Section  string        `json:"section"`
	Title    string        `json:"title"`
	Status   Status        `json:"status"`
	Seen     string        `json:"seen"`
	Duration time.Duration `json:"durationNs"`
}

// Options configure a run.
type Options struct {
	// CheckTimeout bounds each check (default 10 s).
	CheckTimeout time.Duration
	// AnswerWait bounds how long a check waits for an answer that the
	// server owes to no request, such as a null-id error about a bad frame,
	// an injected stream or an unwanted datagram: a server that ignores what
	// it got says nothing, so silence past AnswerWait is the verdict
	// (default 2 s, at most CheckTimeout). These checks run concurrently
	// with the others, each on its own session.
	AnswerWait time.Duration
	// FINWait bounds how long the judge of client mode waits, after
	// $/shutdown and its last answer, for the client to finish its
	// direction of the control stream before it closes the session
	// (default DefaultFINWait). Only the project's check client.shutdown-fin
	// looks at that FIN; a client that follows the guide alone sends none
	// and so costs each scenario this long.
	FINWait time.Duration
	// OnNotice, if set, receives what the runner says once per run rather
	// than per check (that it fell back to WebTransport draft-02); nil
	// writes it to os.Stderr.
	OnNotice func(string)
	// Expected lists the ids of checks expected to fail (a baseline).
	Expected map[string]bool
	// Only, if set, runs only the checks with these ids.
	Only map[string]bool
	// OnResult, if set, is called with each result as soon as its check
	// finishes, from the goroutine that called RunServer or RunClient.
	OnResult func(Result)
}

// expect applies the baseline of expected failures to r.
func (o Options) expect(r Result) Result {
	if o.Expected[r.ID] {
		switch r.Status {
		case Fail:
			r.Status = XFail
		case Pass:
			r.Status = XPass
		}
	}
	return r
}

// report adds r to rs and tells OnResult.
func (o Options) report(rs []Result, r Result) []Result {
	r = o.expect(r)
	if o.OnResult != nil {
		o.OnResult(r)
	}
	return append(rs, r)
}

// DefaultAnswerWait is Options.AnswerWait's default.
const DefaultAnswerWait = 2 * time.Second

// DefaultFINWait is Options.FINWait's default.
const DefaultFINWait = 3 * time.Second

// withDefaults fills o's zero durations.
func (o Options) withDefaults(checkTimeout time.Duration) Options {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = checkTimeout
	}
	if o.AnswerWait <= 0 {
		o.AnswerWait = DefaultAnswerWait
	}
	o.AnswerWait = min(o.AnswerWait, o.CheckTimeout)
	if o.FINWait <= 0 {
		o.FINWait = DefaultFINWait
	}
	return o
}

// notice says s once, to OnNotice or stderr.
func (o Options) notice(s string) {
	if o.OnNotice != nil {
		o.OnNotice(s)
		return
	}
	fmt.Fprintln(os.Stderr, "mcp-flow-conformance:", s)
}

// answerWaitKey carries Options.AnswerWait to a check's context.
type answerWaitKey struct{}

// answerWait is how long a check waits for an answer to no request (waits).
func answerWait(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(answerWaitKey{}).(time.Duration); ok {
		return d
	}
	return DefaultAnswerWait
}

// RunServer runs the checks against the server t, each on its own session
// and within its own deadline. The checks that wait for an answer to no
// request (forNotice) start first and run concurrently, each bounded by
// Options.AnswerWait; the others run one at a time beside them. Results
// come in the checks' order. It first makes sure that something answers at
// t: when nothing does, every check fails at once with the reason, instead
// of each running into a dial timeout.
func RunServer(ctx context.Context, t Target, checks []Check, o Options) []Result {
	o = o.withDefaults(10 * time.Second)
	t, unreachable := reach(ctx, t, o.CheckTimeout, o.notice)
	var todo []Check
	for _, c := range checks {
		if o.Only == nil || o.Only[c.ID] {
			todo = append(todo, c)
		}
	}
	var out []Result
	if unreachable != nil {
		for _, c := range todo {
			out = o.report(out, Result{ID: c.ID, Level: c.Level, Source: c.Source, Section: c.Section, Title: c.Title, Status: Fail,
				Seen: "no session: " + unreachable.Error()})
		}
		return out
	}
	early := make([]chan Result, len(todo))
	for i, c := range todo {
		if c.waits == forNotice {
			early[i] = make(chan Result, 1)
			go func() { early[i] <- runOne(ctx, t, c, o) }()
		}
	}
	for i, c := range todo {
		if early[i] != nil {
			out = o.report(out, <-early[i])
			continue
		}
		out = o.report(out, runOne(ctx, t, c, o))
	}
	return out
}

func runOne(ctx context.Context, t Target, c Check, o Options) (r Result) {
	r = Result{ID: c.ID, Level: c.Level, Source: c.Source, Section: c.Section, Title: c.Title}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, answerWaitKey{}, o.AnswerWait), o.CheckTimeout)
	defer cancel()
	start := time.Now()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fail("the check panicked: %v", p)
			}
		}()
		done <- c.run(cctx, t)
	}()
	var oc outcome
	select {
	case oc = <-done:
	case <-cctx.Done():
		// The check's own reads carry the deadline; this is the last resort
		// for a peer that hangs something else.
		select {
		case oc = <-done:
		case <-time.After(2 * time.Second):
			oc = fail("no verdict within %v: the peer hangs", o.CheckTimeout)
		}
	}
	r.Duration = time.Since(start)
	r.Status, r.Seen = oc.status, oc.seen
	return r
}

// Failed reports whether any MUST check failed (expected failures aside):
// the runner's exit status.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Level == MUST && r.Status == Fail {
			return true
		}
	}
	return false
}

// Counts sums the results by status.
func Counts(rs []Result) map[Status]int {
	m := map[Status]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// WriteTable writes the results for people. What a failed check saw is
// written whole; other rows are clipped.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tLEVEL\tSOURCE\tCHECK\t§\tSEEN")
	for _, r := range rs {
		fmt.Fprintln(tw, row(r))
	}
	c := Counts(rs)
	fmt.Fprintf(tw, "\n%d passed, %d failed, %d skipped, %d expected failures, %d unexpected passes\n", c[Pass], c[Fail], c[Skip], c[XFail], c[XPass])
	return tw.Flush()
}

// row is r as one tab-separated line of the table (no newline).
func row(r Result) string {
	seen := r.Seen
	if r.Status != Fail {
		seen = clip(seen)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", strings.ToUpper(string(r.Status)), r.Level, r.Source, r.ID, r.Section, seen)
}

// WriteJSON writes the results as a JSON array.
func WriteJSON(w io.Writer, rs []Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(rs)
}

// WriteJUnit writes the results as JUnit XML, one test case per check.
func WriteJUnit(w io.Writer, suite string, rs []Result) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      float64  `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	ts := testsuite{Name: suite, Tests: len(rs)}
	for _, r := range rs {
		tc := testcase{Name: r.ID, Classname: string(r.Level) + " " + string(r.Source) + " §" + r.Section, Time: r.Duration.Seconds()}
		switch r.Status {
		case Fail:
			tc.Failure = &failure{Message: r.Title, Text: r.Seen}
			ts.Failures++
		case Skip, XFail:
			tc.Skipped = &skipped{Message: string(r.Status) + ": " + r.Seen}
			ts.Skipped++
		}
		ts.Cases = append(ts.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	return e.Encode(ts)
}

// LoadBaseline reads an expected-failures file: one check id a line, # for
// comments.
func LoadBaseline(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line != "" {
			m[line] = true
		}
	}
	return m, sc.Err()
}
