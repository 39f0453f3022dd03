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

// The bridge packages' dependencies (doc.go): module packages under
// bridge/ each may import, and what fallback may. A front imports the core
// and plainio, never the upstream nor the other front; the upstream only
// plainio; the core only plainio; plainio none of them; either side may
// count what it runs with running, which imports none; bridge, the public
// API and the go-sdk adapters, any.
var bridgeImports = map[string][]string{
	"bridge":                     {"bridge/internal/core", "bridge/internal/stdiofront", "bridge/internal/httpfront", "bridge/internal/upstream", "bridge/plainio", "bridge/sdkflow"},
	"bridge/internal/core":       {"bridge/plainio"},
	"bridge/internal/running":    {},
	"bridge/internal/stdiofront": {"bridge/internal/core", "bridge/plainio"},
	"bridge/internal/httpfront":  {"bridge/internal/core", "bridge/internal/running", "bridge/plainio"},
	"bridge/internal/upstream":   {"bridge/internal/running", "bridge/plainio"},
	"bridge/sdkflow":             {"bridge/internal/core", "bridge/internal/upstream"},
	"bridge/plainio":             {},
	"fallback":                   {"bridge/plainio"},
}

const module = "github.com/mcp-flow/mcp-flow/"

// TestLayoutImportsOneWay holds the bridge packages to their layout
// (doc.go): each imports only the bridge packages bridgeImports lets it
// (a front the core and plainio, the upstream plainio alone), every bridge
// package is listed there, and fallback (whose relay is a stdio front of
// its own) reaches no bridge package but plainio, not even through another
// package. The compiler forbids cycles; this test forbids the imports that
// would knot the sides again.
func TestLayoutImportsOneWay(t *testing.T) {
	goCmd := goCommand(t)
	out, err := exec.Command(goCmd, "list", "-json=ImportPath,Imports,Deps", module+"bridge/...", module+"fallback").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for d := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if d.Decode(&p) != nil {
			break
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		seen[name] = true
		may, ok := bridgeImports[name]
		if !ok {
			t.Errorf("%s is not in bridgeImports: say what it may import (and add it to doc.go)", name)
			continue
		}
		imports, verb := p.Imports, "imports"
		if name == "fallback" {
			imports, verb = p.Deps, "depends on" // not even through another package
		}
		for _, imp := range imports {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && (dep == "bridge" || strings.HasPrefix(dep, "bridge/")) && !slices.Contains(may, dep) {
				t.Errorf("%s %s %s; it may import only %v of the bridge packages", name, verb, dep, may)
			}
		}
	}
	for name := range bridgeImports {
		if !seen[name] {
			t.Errorf("go list did not list %s", name)
		}
	}
}

// TestLayoutCallsOneWay: inside each bridge package, calls go one way
// between files: no two files use each other's functions, methods,
// variables or constants (a file that needs its user is two jobs in one,
// or one job in two files).
func TestLayoutCallsOneWay(t *testing.T) {
	for dir := range bridgeImports {
		if !strings.HasPrefix(dir, "bridge") {
			continue
		}
		uses := fileUses(t, strings.TrimPrefix(strings.TrimPrefix(dir, "bridge"), "/"))
		for from, tos := range uses {
			for to, names := range tos {
				if back := uses[to][from]; back != nil && from < to {
					t.Errorf("%s: %s and %s use each other: %v and %v", dir, from, to, names, back)
				}
			}
		}
	}
}

func goCommand(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	return goCmd
}

// fileUses type-checks the files of the package in dir (relative to this
// one; "" is this one) for this platform and returns,
// by file, the other files whose package-level functions, methods, variables
// and constants it uses.
func fileUses(t *testing.T, dir string) map[string]map[string][]string {
	t.Helper()
	if dir == "" {
		dir = "."
	}
	out, err := exec.Command(goCommand(t), "list", "-export", "-deps", "-json=ImportPath,Export", "./"+dir).Output()
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
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, filepath.Base(n)); err != nil || !ok {
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
	pkg, err := conf.Check(dir, fset, files, info)
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
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
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
