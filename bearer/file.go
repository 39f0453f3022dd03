package bearer

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// FileSource returns a token source that reads the file at path on each
// call and trims surrounding whitespace, so that a token renewed on disk by
// another process is picked up by the next request (the client side,
// RFC 6750 §2.1). A missing, unreadable or empty file is an error naming
// the file, never its content.
func FileSource(path string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("bearer: token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("bearer: token file %s is empty", path)
		}
		return tok, nil
	}
}
