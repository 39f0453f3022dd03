package bridge_test

import (
	"os"
	"testing"

	"github.com/mcp-flow/mcp-flow/internal/gobuild"
)

// TestMain removes the commands the tests built (buildBinary) when they
// are done.
func TestMain(m *testing.M) {
	code := m.Run()
	gobuild.Cleanup()
	os.Exit(code)
}
