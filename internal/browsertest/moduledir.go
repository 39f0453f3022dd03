package browsertest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var moduleDir struct {
	once sync.Once
	dir  string
	err  error
}

// ModuleDir returns the folder of the main module (its go.mod's), as the go
// command finds it from the working directory: a test's package folder, or
// the repository for make's go run. Not runtime.Caller, whose file names
// are the module's import paths, not folders, in a -trimpath build (make
// test's, so that two clones share the build cache).
func ModuleDir() (string, error) {
	moduleDir.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		switch {
		case err != nil:
			moduleDir.err = fmt.Errorf("go env GOMOD: %w", err)
		case gomod == "" || gomod == "/dev/null":
			moduleDir.err = fmt.Errorf("go env GOMOD: the working directory is in no module")
		default:
			moduleDir.dir = filepath.Dir(gomod)
		}
	})
	return moduleDir.dir, moduleDir.err
}
