package lbtest

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/flowtest"
	"github.com/quic-go/quic-go"
)

// readTally counts the lines of the tally file by key.
func readTally(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ran := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ran[sc.Text()]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ran
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// nginxSummary counts the error log's lines by level, and the upstream
// failures nginx saw (a server between its exit and its replacement).
func nginxSummary(dir string) string {
	data, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	levels := map[string]int{}
	refused := 0
	for _, l := range strings.Split(string(data), "\n") {
		if _, rest, ok := strings.Cut(l, " ["); ok {
			if lvl, _, ok := strings.Cut(rest, "]"); ok {
				levels[lvl]++
			}
		}
		if strings.Contains(l, "Connection refused") {
			refused++
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(levels)) {
		fmt.Fprintf(&b, "%s %d, ", k, levels[k])
	}
	fmt.Fprintf(&b, "%d lines with Connection refused", refused)
	return b.String()
}

// nginxTrouble is the first lines of nginx's error log at warn and above.
func nginxTrouble(dir string) string {
	data, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if (strings.Contains(l, "[warn]") || strings.Contains(l, "[error]") || strings.Contains(l, "[crit]") || strings.Contains(l, "[alert]")) && len(out) < 20 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// endings counts how sessions ended in logs (the flow clients' session
// errors, the fronts' stderr) from a mark on: by a stateless reset or by
// the idle timeout, in quic-go's own words (its error reaches a session's
// error as text at times: webtransport-go quotes it).
type endings map[*flowtest.SyncBuffer]int

var resetText, idleText = (&quic.StatelessResetError{}).Error(), (&quic.IdleTimeoutError{}).Error()

// mark records where each log ends now.
func (e endings) mark(logs []*flowtest.SyncBuffer) {
	for _, l := range logs {
		e[l] = len(l.String())
	}
}

// count counts the endings written since the mark.
func (e endings) count(logs []*flowtest.SyncBuffer) (reset, idle int) {
	for _, l := range logs {
		s := l.String()[e[l]:]
		reset += strings.Count(s, resetText)
		idle += strings.Count(s, idleText)
	}
	return reset, idle
}
