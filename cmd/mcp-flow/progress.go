package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-flow/mcp-flow/flow"
)

// term owns the CLI's stderr: status lines (progress bars, transfer meters)
// are drawn in place when stderr is a terminal and not at all otherwise, so
// that scripts see clean output; messages (say) always go out, after the
// status line is cleared. It is safe for concurrent use (the signal handler
// says things while a call draws).
type term struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	drawn bool
	muted bool // no more status lines (after an interrupt)
}

func newTerm(w io.Writer) *term { return &term{w: w, tty: isTerminal(w)} }

// draw replaces the status line with line (terminals only).
func (t *term) draw(line string) {
	if !t.tty {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.muted {
		return
	}
	fmt.Fprintf(t.w, "\r\033[K%s", line)
	t.drawn = true
}

// clear erases the status line, if one is drawn.
func (t *term) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
}

func (t *term) clearLocked() {
	if t.drawn {
		fmt.Fprint(t.w, "\r\033[K")
		t.drawn = false
	}
}

// mute stops status lines for good.
func (t *term) mute() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.muted = true
}

// say clears the status line and writes one line.
func (t *term) say(format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	fmt.Fprintf(t.w, format+"\n", a...)
}

// progressLine draws a progress notification (spec §6.2) as a bar when it
// has a total.
func progressLine(p flow.Progress) string {
	const width = 30
	line := fmt.Sprintf("%g", p.Progress)
	if p.Total > 0 {
		n := int(width * min(p.Progress/p.Total, 1))
		line = fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*min(p.Progress/p.Total, 1))
	}
	if p.Message != "" {
		line += " " + p.Message
	}
	return line
}

// meterPeriod is how often a transfer meter redraws.
const meterPeriod = 250 * time.Millisecond

// meter counts the bytes of a call's execution streams as they are written
// and, on a terminal, draws bytes, rate and, when the size is known, the
// share done and the ETA, every meterPeriod from a goroutine of its own, so
// that the line moves even while a write blocks. The size is known when the
// server told it as progress in bytes (spec §6.3); a ref/stream block has
// none, so without that the line says that it cannot tell an ETA.
type meter struct {
	t     *term
	n     atomic.Int64
	total int64 // 0: unknown
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

func newMeter(t *term, total int64) *meter {
	m := &meter{t: t, total: total, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if !t.tty {
		close(m.done)
		return m
	}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(meterPeriod)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				m.t.draw(m.line())
			}
		}
	}()
	return m
}

// counting returns a writer to w that counts what it writes on m.
func (m *meter) counting(w io.Writer) io.Writer { return meterWriter{m, w} }

type meterWriter struct {
	m *meter
	w io.Writer
}

func (mw meterWriter) Write(p []byte) (int, error) {
	n, err := mw.w.Write(p)
	mw.m.n.Add(int64(n))
	return n, err
}

// line is the meter's status line: "12.0 MiB of 100.0 MiB (12%)  85.1
// MiB/s  ETA 1s" when the size is known, else "12.0 MiB  85.1 MiB/s  (size
// unknown: no ETA)".
func (m *meter) line() string {
	n := m.n.Load()
	el := time.Since(m.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(n) / el
	}
	if m.total <= 0 || n > m.total {
		return fmt.Sprintf("%s  %s/s  (size unknown: no ETA)", size(float64(n)), size(rate))
	}
	s := fmt.Sprintf("%s of %s (%.0f%%)  %s/s", size(float64(n)), size(float64(m.total)), 100*float64(n)/float64(m.total), size(rate))
	if rate > 0 && n < m.total {
		s += fmt.Sprintf("  ETA %s", time.Duration(float64(m.total-n)/rate*float64(time.Second)).Round(time.Second))
	}
	return s
}

// end stops the meter and, on a terminal, leaves a summary line.
func (m *meter) end() {
	close(m.stop)
	<-m.done
	if m.t.tty {
		n := m.n.Load()
		el := time.Since(m.start)
		m.t.say("mcp-flow: %s in %v (%s/s)", size(float64(n)), el.Round(time.Millisecond), size(float64(n)/max(el.Seconds(), 1e-9)))
	}
}

// size formats a byte count with binary units.
func size(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
