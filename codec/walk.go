package codec

import (
	"bytes"
	"strconv"
)

// sink receives a JSON value as events, in order; the binary encoders
// implement it. The byte slices it is given are valid only during the call.
type sink interface {
	null()
	boolean(bool)
	number(number)
	str(s []byte) // UTF-8 text, unescaped
	// binary is offered the text of a string held by a member named "data"
	// or "blob" (MCP's image/audio data and resource blobs). If it is
	// canonical standard base64 (it decodes, and re-encodes to exactly
	// itself), the sink takes it as raw bytes and reports true; else it
	// takes nothing and the string is sent to str.
	binary(b64 []byte) bool
	beginArray()
	endArray(n int)
	beginObject()
	key(k []byte) // UTF-8 text, unescaped
	endObject(n int)
}

// isBinaryKey names the members whose base64 strings travel as bytes.
func isBinaryKey(k []byte) bool { return string(k) == "data" || string(k) == "blob" }

// walkJSON reads the one JSON value in raw and replays it into s, in one pass
// over the bytes with no tokenizer and no copy of a string that needs no
// unescaping (spec §4.4). It accepts what jsontext accepts by default
// (RFC 8259 with RFC 7493's rules: valid UTF-8, escapes that decode to
// Unicode scalar values, no duplicate member names; whitespace around the
// value) and enforces lim's depth, element and number limits. Errors are
// *LimitError, *EncodeError (a number the encodings cannot carry) or a
// syntax error.
//
// The encoders take the fused scanner first (fuse, fused.go: the same walk
// and the writer in one loop); walkJSON is the reference it is held to, and
// gives the exact error for what fuse refuses.
func walkJSON(raw []byte, lim Limits, s sink) error {
	var w walker
	return w.walk(raw, lim, s)
}

// walk is walkJSON reusing w's buffers.
func (w *walker) walk(raw []byte, lim Limits, s sink) error {
	w.data, w.pos, w.lim, w.s, w.depth = raw, 0, lim, s, 0
	w.names, w.arena = w.names[:0], w.arena[:0]
	w.space()
	if err := w.value(); err != nil {
		return err
	}
	if w.space(); w.pos != len(w.data) {
		return w.syntax("data after the value")
	}
	return nil
}

// release drops w's buffers when a large value grew them, so that a pooled
// walker keeps at most a few KiB.
func (w *walker) release() {
	w.data, w.s = nil, nil
	if cap(w.tmp) > 4<<10 {
		w.tmp = nil
	}
	if cap(w.arena) > 4<<10 {
		w.arena = nil
	}
	if cap(w.names) > 256 {
		w.names = nil
	}
	if cap(w.frames) > 64 {
		w.frames = nil
	}
	clear(w.names[:cap(w.names)])
}

type walker struct {
	data  []byte
	pos   int
	lim   Limits
	s     sink
	depth int      // containers open
	names [][]byte // member names of the objects open, for duplicates
	tmp   []byte   // an unescaped string value, reused
	arena []byte   // unescaped member names, append-only while they are kept
	// frames holds the containers open in the fused scanner (fused.go).
	frames []fusedFrame
}

// syntaxError is a JSON text that is not valid.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.off) + ": " + e.msg
}

func (w *walker) syntax(msg string) error { return &syntaxError{w.pos, msg} }

func (w *walker) space() {
	if w.pos < len(w.data) && w.data[w.pos] > ' ' {
		return
	}
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

func (w *walker) literal(lit string) error {
	if !bytes.HasPrefix(w.data[w.pos:], []byte(lit)) {
		return w.syntax("invalid literal")
	}
	w.pos += len(lit)
	return nil
}

func (w *walker) value() error {
	if w.pos >= len(w.data) {
		return w.syntax("unexpected end of input")
	}
	switch c := w.data[w.pos]; {
	case c == '"':
		raw, esc, err := w.span()
		if err != nil {
			return err
		}
		w.s.str(w.unescaped(raw, esc))
		return nil
	case c == '{':
		return w.object()
	case c == '[':
		return w.array()
	case c == 't':
		if err := w.literal("true"); err != nil {
			return err
		}
		w.s.boolean(true)
		return nil
	case c == 'f':
		if err := w.literal("false"); err != nil {
			return err
		}
		w.s.boolean(false)
		return nil
	case c == 'n':
		if err := w.literal("null"); err != nil {
			return err
		}
		w.s.null()
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return w.number()
	}
	return w.syntax("invalid character " + strconv.QuoteRune(rune(w.data[w.pos])) + " at the start of a value")
}

func (w *walker) open() error {
	if w.depth >= w.lim.MaxDepth {
		return errTooDeep(w.lim)
	}
	w.depth++
	w.pos++
	w.space()
	return nil
}

func (w *walker) array() error {
	if err := w.open(); err != nil {
		return err
	}
	w.s.beginArray()
	n := 0
	if w.pos < len(w.data) && w.data[w.pos] == ']' {
		w.pos++
		w.depth--
		w.s.endArray(0)
		return nil
	}
	for {
		if n++; n > w.lim.MaxElements {
			return errTooMany(w.lim)
		}
		if err := w.value(); err != nil {
			return err
		}
		if end, err := w.after(']', "an array"); end || err != nil {
			if end {
				w.s.endArray(n)
			}
			return err
		}
	}
}

// after reads what follows an element of a container: a comma, when
// another element follows, or the container's closing byte (end).
func (w *walker) after(closing byte, in string) (end bool, err error) {
	w.space()
	if w.pos >= len(w.data) {
		return false, w.syntax("unexpected end of input in " + in)
	}
	switch w.data[w.pos] {
	case ',':
		w.pos++
		w.space()
		return false, nil
	case closing:
		w.pos++
		w.depth--
		return true, nil
	}
	return false, w.syntax("expected ',' or '" + string(closing) + "' in " + in)
}

// smallObject is the number of members an object may have before its names
// are checked for duplicates in a set rather than one against another.
const smallObject = 16

// members is what an object being read keeps to find duplicate names.
type members struct {
	first int                 // the object's first name in walker.names
	seen  uint64              // a bit per (length, first byte) of the names so far
	set   map[string]struct{} // the names, past smallObject of them
}

// nameBit is name's bit in members.seen.
func nameBit(name []byte) uint64 {
	if len(name) > 0 {
		return uint64(1) << ((uint(len(name))*7 + uint(name[0])) & 63)
	}
	return 1
}

// member records name, the n-th of the object m, and reports whether it
// is a duplicate.
func (w *walker) member(m *members, n int, name []byte) bool {
	if n <= smallObject {
		// Names are compared only when one of the same length and
		// first byte came before.
		h := nameBit(name)
		if m.seen&h != 0 {
			for _, o := range w.names[m.first:] {
				if string(o) == string(name) {
					return true
				}
			}
		}
		m.seen |= h
		w.names = append(w.names, name)
		return false
	}
	if m.set == nil {
		m.set = make(map[string]struct{}, 2*smallObject)
		for _, o := range w.names[m.first:] {
			m.set[string(o)] = struct{}{}
		}
	}
	if _, dup := m.set[string(name)]; dup {
		return true
	}
	m.set[string(name)] = struct{}{}
	return false
}

func (w *walker) object() error {
	if err := w.open(); err != nil {
		return err
	}
	w.s.beginObject()
	m := members{first: len(w.names)}
	first := m.first
	n := 0
	if w.pos < len(w.data) && w.data[w.pos] == '}' {
		w.pos++
		w.depth--
		w.s.endObject(0)
		return nil
	}
	for {
		if n++; n > w.lim.MaxElements {
			return errTooMany(w.lim)
		}
		if w.pos >= len(w.data) || w.data[w.pos] != '"' {
			return w.syntax("expected a member name")
		}
		raw, esc, err := w.span()
		if err != nil {
			return err
		}
		name := raw
		if esc {
			at := len(w.arena)
			w.arena = w.unescape(w.arena, raw)
			name = w.arena[at:len(w.arena):len(w.arena)]
		}
		if w.member(&m, n, name) {
			return w.syntax("duplicate member name " + strconv.Quote(string(name)))
		}
		w.s.key(name)
		w.space()
		if w.pos >= len(w.data) || w.data[w.pos] != ':' {
			return w.syntax("expected ':' after a member name")
		}
		w.pos++
		w.space()
		if isBinaryKey(name) && w.pos < len(w.data) && w.data[w.pos] == '"' {
			// A base64 member's text goes to the sink as it is, never
			// copied first.
			raw, esc, err := w.span()
			if err != nil {
				return err
			}
			if esc || !canonicalShape(raw) || !w.s.binary(raw) {
				w.s.str(w.unescaped(raw, esc))
			}
		} else if err := w.value(); err != nil {
			return err
		}
		if end, err := w.after('}', "an object"); end || err != nil {
			if end {
				w.names = w.names[:first]
				if first == 0 {
					w.arena = w.arena[:0]
				}
				w.s.endObject(n)
			}
			return err
		}
	}
}

// number reads a number, checks its grammar and MaxNumberDigits, and gives
// the sink its binary form (number.go).
func (w *walker) number() error {
	n, err := w.numberValue()
	if err != nil {
		return err
	}
	w.s.number(n)
	return nil
}
