package layout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/mcp-flow/mcp-flow"

// pkg is what go list says of one package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
}

// rel is p's path inside the module ("" for the module's root).
func rel(p string) string {
	if p == module {
		return ""
	}
	r, _ := strings.CutPrefix(p, module+"/")
	return r
}

// goList runs go list with args and returns its standard output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	return out
}

// modulePackages lists every package of the module (go list ./...), each
// with its non-test imports inside the module.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(goList(t, "-json=ImportPath,Dir,Imports", module+"/...")))
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		var own []string
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				own = append(own, rel(imp))
			}
		}
		p.Imports = own
		p.ImportPath = rel(p.ImportPath)
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// row is one row of the package table.
type row struct {
	line     int      // in docs/design.md
	packages []string // first column
	imports  []string // third column; "none" is empty
	judge    string   // fourth column, trimmed
}

// name is how a failure names the row: its first package.
func (r row) name() string { return "`" + r.packages[0] + "`" }

var backticked = regexp.MustCompile("`([^`]+)`")

// names are the backticked names of a cell, a trailing slash dropped.
func names(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, strings.TrimSuffix(m[1], "/"))
	}
	return out
}

// designTable reads the table of docs/design.md's section "Packages, one job
// each".
func designTable(t *testing.T, root string) []row {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "## Packages, one job each":
			in = true
		case in && strings.HasPrefix(line, "## "):
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|") // `\|` is a | inside a cell
			cells = cells[1 : len(cells)-1]
			if len(cells) != 4 {
				t.Fatalf("docs/design.md:%d: a row of the package table has %d cells, want 4 (package | job | imports of the module | judge may use): %s", n, len(cells), line)
			}
			r := row{line: n, packages: names(cells[0]), judge: strings.TrimSpace(cells[3])}
			if c := strings.TrimSpace(cells[2]); c != "none" {
				r.imports = names(c)
			}
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal(`docs/design.md has no package table under "## Packages, one job each"`)
	}
	return rows
}

// moduleRoot is the module's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(goList(t, "-m", "-f", "{{.Dir}}")))
}

// cell writes names as the table's imports column does.
func cell(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// TestPackageTable: docs/design.md's package table names every package of
// the module (go list ./...) once, each row's imports column is exactly what
// its packages import of the module (outside the row), every such import is
// of a row above it or of its own row, and the judge's column says "yes"
// exactly for the rows conformance depends on (go list -deps). A failure
// names the row to add, fix or move, and what to write.
func TestPackageTable(t *testing.T) {
	root := moduleRoot(t)
	rows := designTable(t, root)
	pkgs := modulePackages(t)

	rowOf := map[string]int{} // package -> index in rows
	for i, r := range rows {
		for _, p := range r.packages {
			if j, dup := rowOf[p]; dup {
				t.Errorf("docs/design.md:%d: `%s` is in row %s (line %d) too; name it once", r.line, p, rows[j].name(), rows[j].line)
			}
			rowOf[p] = i
		}
	}
	listed := map[string]pkg{}
	for _, p := range pkgs {
		listed[p.ImportPath] = p
	}
	for p, i := range rowOf {
		if _, ok := listed[p]; !ok {
			t.Errorf("docs/design.md:%d: row %s names `%s`, which go list ./... does not list: remove it or fix its path", rows[i].line, rows[i].name(), p)
		}
	}

	// Packages in no row: say between which rows one belongs.
	for _, p := range pkgs {
		if _, ok := rowOf[p.ImportPath]; ok {
			continue
		}
		after := -1 // the lowest row it imports
		for _, imp := range p.Imports {
			if i, ok := rowOf[imp]; ok && i > after {
				after = i
			}
		}
		before := len(rows) // the highest row importing it
		for _, q := range pkgs {
			if i, ok := rowOf[q.ImportPath]; ok && i < before && slices.Contains(q.Imports, p.ImportPath) {
				before = i
			}
		}
		where := "at the end of the table"
		switch {
		case after >= 0 && before < len(rows):
			where = "after row " + rows[after].name() + " and before row " + rows[before].name()
		case after >= 0:
			where = "anywhere after row " + rows[after].name()
		case before < len(rows):
			where = "anywhere before row " + rows[before].name()
		}
		t.Errorf("docs/design.md: `%s` is in no row of the package table: add a row (imports of the module: %s) %s, or name it in the row of its job", p.ImportPath, cell(p.Imports), where)
	}

	// Each row's imports: exact, and from above.
	for i, r := range rows {
		var want []string
		for _, p := range r.packages {
			for _, imp := range listed[p].Imports {
				if !slices.Contains(r.packages, imp) && !slices.Contains(want, imp) {
					want = append(want, imp)
				}
			}
		}
		order := func(ps []string) []string {
			ps = slices.Clone(ps)
			slices.SortStableFunc(ps, func(a, b string) int {
				ra, oka := rowOf[a]
				rb, okb := rowOf[b]
				if !oka {
					ra = len(rows)
				}
				if !okb {
					rb = len(rows)
				}
				if ra != rb {
					return ra - rb
				}
				return strings.Compare(a, b)
			})
			return ps
		}
		want = order(want)
		if !slices.Equal(order(r.imports), want) {
			t.Errorf("docs/design.md:%d: row %s says it imports %s; its packages import %s of the module: write that in its third column", r.line, r.name(), cell(r.imports), cell(want))
		}
		for _, imp := range want {
			if j, ok := rowOf[imp]; ok && j > i {
				t.Errorf("docs/design.md:%d: row %s imports `%s`, whose row %s (line %d) is below it: a package imports only rows above its own; move one of the two rows", r.line, r.name(), imp, rows[j].name(), rows[j].line)
			}
		}
	}

	// The judge's column.
	judgeDeps := map[string]bool{}
	for _, d := range strings.Fields(string(goList(t, "-deps", module+"/conformance/..."))) {
		if r := rel(d); r != d && r != "conformance" && !strings.HasPrefix(r, "conformance/") {
			judgeDeps[r] = true
		}
	}
	for _, r := range rows {
		used := slices.ContainsFunc(r.packages, func(p string) bool { return judgeDeps[p] })
		if used != (r.judge == "yes") {
			want := "yes"
			if !used {
				want = "**no** (or — for the judge's own rows)"
			}
			t.Errorf("docs/design.md:%d: row %s's judge column says %q; conformance (go list -deps) %s it: write %s", r.line, r.name(), r.judge, map[bool]string{true: "uses", false: "does not use"}[used], want)
		}
	}
}

// longFile is the line count above which a Go file must say why it is
// longer (docs/design.md: "under ~500 lines or says at its top why").
const longFile = 400

// longMarker is the phrase of the sentence that says why.
const longMarker = "This file is long because"

// generated matches the line that marks a generated Go file
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestLongFilesSayWhy: every Go file of the module that is neither a test
// nor generated and is over 400 lines has, in a comment before its first
// declaration (its imports aside), a sentence starting "This file is long
// because".
func TestLongFilesSayWhy(t *testing.T) {
	root := moduleRoot(t)
	var long []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Count(src, []byte("\n")) <= longFile || generated.Match(src) {
			return nil
		}
		name, _ := filepath.Rel(root, path)
		if !saysWhy(t, name, src) {
			long = append(long, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range long {
		t.Errorf("%s is over %d lines and does not say why: split it, or put a comment before its first declaration with a sentence starting %q (as conformance/checks.go does)", name, longFile, longMarker)
	}
}

// saysWhy reports whether a comment of src before its first non-import
// declaration holds longMarker.
func saysWhy(t *testing.T, name string, src []byte) bool {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return true
	}
	end := token.Pos(len(src) + int(f.FileStart))
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		end = d.Pos()
		if g, ok := d.(*ast.GenDecl); ok && g.Doc != nil {
			end = g.Doc.Pos()
		} else if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
			end = fn.Doc.Pos()
		}
		break
	}
	for _, c := range f.Comments {
		if c.Pos() < end && strings.Contains(strings.Join(strings.Fields(c.Text()), " "), longMarker) {
			return true
		}
	}
	return false
}
