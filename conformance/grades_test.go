package conformance

import (
	"os"
	"strings"
	"testing"
)

// TestGradesAreDocumented holds docs/conformance.md's Grades table to the
// checks: one row per check with the same level and source, and in every
// guide row a quotation from the guide or the published schema.
func TestGradesAreDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// Cells split at " | "; a \| inside a quotation stays in its cell.
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 4 {
			t.Errorf("row %q: want 4 cells", line)
			continue
		}
		id := strings.Trim(cells[0], "`")
		if _, dup := rows[id]; dup {
			t.Errorf("%s: two rows", id)
		}
		rows[id] = cells
	}
	all := append(ServerChecks(), ClientChecks()...)
	for _, c := range all {
		cells, ok := rows[c.ID]
		if !ok {
			t.Errorf("%s: no row in the Grades table", c.ID)
			continue
		}
		if cells[1] != string(c.Level) || cells[2] != string(c.Source) {
			t.Errorf("%s: documented %s %s, the check is %s %s", c.ID, cells[1], cells[2], c.Level, c.Source)
		}
		text := strings.Join(cells[3:], " | ")
		if c.Source == Guide && (!strings.Contains(text, `"`) || !(strings.Contains(text, "guide §") || strings.Contains(text, "schema"))) {
			t.Errorf("%s: a guide check without a quotation from the guide or the schema: %s", c.ID, text)
		}
		delete(rows, c.ID)
	}
	for id := range rows {
		t.Errorf("%s: a row for no check", id)
	}
}
