package bridge

import (
	"encoding/json"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayoutCallsOneWay holds the package to its layout (doc.go): calls go
// one way between files (no two files use each other's functions, methods,
// variables or constants), a front uses the core and the shared files, the
// upstream only the shared files, the core neither side, and the shared
// files only shared files.
func TestLayoutCallsOneWay(t *testing.T) {
	uses := fileUses(t)
	side := func(f string) string {
		switch {
		case strings.HasPrefix(f, "core") || f == "content.go":
			return "core"
		case strings.HasPrefix(f, "front_"):
			return "front"
		case strings.HasPrefix(f, "up"):
			return "upstream"
		case f == "sdk.go" || f == "doc.go":
			return "top"
		}
		return "shared"
	}
	may := map[string][]string{
		"core":     {"core", "shared"},
		"front":    {"front", "core", "shared"},
		"upstream": {"upstream", "shared"},
		"shared":   {"shared"},
		"top":      {"top", "front", "upstream", "core", "shared"},
	}
	for from, tos := range uses {
		for to, names := range tos {
			if back := uses[to][from]; back != nil {
				if from < to {
					t.Errorf("%s and %s use each other: %v and %v", from, to, names, back)
				}
			}
			if !slices.Contains(may[side(from)], side(to)) {
				t.Errorf("%s (%s) uses %s (%s): %v", from, side(from), to, side(to), names)
			}
		}
	}
}

// fileUses type-checks the package's files for this platform and returns,
// by file, the other files whose package-level functions, methods, variables
// and constants it uses.
func fileUses(t *testing.T) map[string]map[string][]string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goCmd, "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	for d := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p struct{ ImportPath, Export string }
		if d.Decode(&p) != nil {
			break
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(".", n); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) }
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check("bridge", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]map[string][]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg {
			continue
		}
		switch o := obj.(type) {
		case *types.Func:
			if o.Type().(*types.Signature).Recv() == nil && o.Parent() != pkg.Scope() {
				continue
			}
		case *types.Var, *types.Const:
			if obj.Parent() != pkg.Scope() {
				continue // fields, locals
			}
		default:
			continue
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		if from == to {
			continue
		}
		if uses[from] == nil {
			uses[from] = map[string][]string{}
		}
		if !slices.Contains(uses[from][to], obj.Name()) {
			uses[from][to] = append(uses[from][to], obj.Name())
		}
	}
	return uses
}
