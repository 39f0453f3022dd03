package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/mcp-flow/mcp-flow/flow"
)

// progressBar draws progress on stderr when stderr is a terminal, and does
// nothing otherwise (so that scripts see clean output).
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	drawn bool
}

func newProgressBar(w io.Writer) *progressBar {
	on := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progressBar{w: w, on: on}
}

func (b *progressBar) update(p flow.Progress) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	const width = 30
	line := fmt.Sprintf("%g", p.Progress)
	if p.Total > 0 {
		n := int(width * min(p.Progress/p.Total, 1))
		line = fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*p.Progress/p.Total)
	}
	if p.Message != "" {
		line += " " + p.Message
	}
	fmt.Fprintf(b.w, "\r\033[K%s", line)
	b.drawn = true
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
