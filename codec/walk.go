package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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

// Bytes of 8 that need a look in a string: a quote, a backslash, a control
// character or a byte of a non-ASCII character (SWAR, "Bit Twiddling Hacks":
// haszero, hasless; exact when no byte has its high bit set).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func special8(x uint64) uint64 {
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	return ((q-lsb)&^q | (b-lsb)&^b | (x-0x20*lsb)&^x | x) & msb
}

// plain marks the bytes a string holds as they are: printable ASCII other
// than a quote and a backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// span reads the string at w.pos (its opening quote) and returns its raw
// contents and whether it holds escapes. It checks every escape (a \u
// surrogate must be one of a pair), that no control character is raw, and
// that the text is valid UTF-8.
func (w *walker) span() (raw []byte, escaped bool, err error) {
	d := w.data
	start := w.pos + 1
	i := start
	utf := -1 // the first byte of a non-ASCII character
	for {
		// 8 bytes at a time to the first that needs a look (the lowest
		// flagged byte is exact: the tricks only err above a true one).
		for i+8 <= len(d) {
			if m := special8(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(d) && plain[d[i]] {
			i++
		}
		if i >= len(d) {
			w.pos = i
			return nil, false, w.syntax("unterminated string")
		}
		switch c := d[i]; {
		case c == '"':
			raw = d[start:i]
			w.pos = i + 1
			if utf >= 0 && !utf8.Valid(d[utf:i]) {
				w.pos = start
				return nil, false, w.syntax("string is not valid UTF-8")
			}
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			n, ok := escapeLen(d[i:])
			if !ok {
				w.pos = i
				return nil, false, w.syntax("invalid escape in a string")
			}
			i += n
		case c >= 0x80:
			if utf < 0 {
				utf = i
			}
			i++
		default:
			w.pos = i
			return nil, false, w.syntax("control character in a string")
		}
	}
}

// escapeLen returns the length of the escape that starts b, and whether it
// is valid: \uD800-\uDBFF must be followed by \uDC00-\uDFFF, which may not
// stand alone.
func escapeLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		r, ok := hex4(b[2:])
		switch {
		case !ok:
			return 0, false
		case utf16.IsSurrogate(r):
			if r >= 0xdc00 || len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
				return 0, false
			}
			lo, ok := hex4(b[8:])
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return 0, false
			}
			return 12, true
		}
		return 6, true
	}
	return 0, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescaped returns the text of a string span: raw itself when it holds no
// escapes, else its unescaping in w.tmp.
func (w *walker) unescaped(raw []byte, esc bool) []byte {
	if !esc {
		return raw
	}
	w.tmp = w.unescape(w.tmp[:0], raw)
	return w.tmp
}

// unescape appends the text of raw, a span that span has checked.
func (w *walker) unescape(dst, raw []byte) []byte {
	for {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:i]...)
		raw = raw[i:]
		switch raw[1] {
		case 'u':
			r, _ := hex4(raw[2:])
			n := 6
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(raw[8:])
				r, n = utf16.DecodeRune(r, lo), 12
			}
			dst = utf8.AppendRune(dst, r)
			raw = raw[n:]
			continue
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default: // " \ /
			dst = append(dst, raw[1])
		}
		raw = raw[2:]
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

// numberValue reads the number at w.pos and returns its binary form.
func (w *walker) numberValue() (number, error) {
	d := w.data
	start := w.pos
	i := start
	if d[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digitsEnd(d, i)
	default:
		w.pos = i
		return number{}, w.syntax("invalid number")
	}
	intEnd := i
	frac := false
	if i < len(d) && d[i] == '.' {
		if j := digitsEnd(d, i+1); j > i+1 {
			i, frac = j, true
		} else {
			w.pos = j
			return number{}, w.syntax("invalid number: no digits after '.'")
		}
	}
	mantEnd := i
	exp := false
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if j := digitsEnd(d, i); j > i {
			i, exp = j, true
		} else {
			w.pos = j
			return number{}, w.syntax("invalid number: no digits in the exponent")
		}
	}
	w.pos = i
	text := d[start:i]
	if digits := mantEnd - intStart - b2i(frac); digits > w.lim.MaxNumberDigits {
		le := errNumber(w.lim)
		return number{}, &EncodeError{Reason: le.Error(), Err: le}
	}
	if !frac && !exp && intEnd-intStart <= 18 && string(text) != "-0" {
		var v int64
		for _, c := range d[intStart:intEnd] {
			v = v*10 + int64(c-'0')
		}
		if start != intStart {
			v = -v
		}
		return number{kind: numInt, i: v}, nil
	}
	if frac || exp {
		if f, ok := shortFloat(text); ok {
			return number{kind: numFloat, f: f}, nil
		}
	}
	n, ok := classify(string(text))
	if !ok {
		return number{}, &EncodeError{Reason: "number " + clip(string(text)) + " has an exponent beyond 64 bits"}
	}
	return n, nil
}

// digitsEnd returns the end of the run of digits at d[i:].
func digitsEnd(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortFloat is classify's fast path for a number with a fraction or an
// exponent: when its significant digits are at most 15 and its magnitude is
// within float64's normal range (10^±307), the float64 nearest to it has
// exactly its decimal value as its shortest form (15 is float64's DBL_DIG:
// such decimals map one-to-one to float64s), so it travels as that float.
// Other numbers report false and go to classify.
func shortFloat(text []byte) (float64, bool) {
	sig, lead, point := 0, true, -1 // significant digits so far; the point's index
	trailingZeros := 0
	digitsBefore := 0     // significant digits before the point
	leadingFracZeros := 0 // zeros between the point and the first significant digit
	i := 0
	if text[0] == '-' {
		i++
	}
	for ; i < len(text); i++ {
		c := text[i]
		if c == '.' {
			point = i
			continue
		}
		if c == 'e' || c == 'E' {
			break
		}
		if lead && c == '0' {
			if point >= 0 {
				leadingFracZeros++
			}
			continue
		}
		lead = false
		sig++
		if c == '0' {
			trailingZeros++
		} else {
			trailingZeros = 0
		}
		if point < 0 {
			digitsBefore++
		}
	}
	sig -= trailingZeros
	if sig > 15 {
		return 0, false
	}
	var e int64
	if i < len(text) {
		v, err := strconv.ParseInt(string(text[i+1:]), 10, 64)
		if err != nil || v > 1000 || v < -1000 {
			return 0, false
		}
		e = v
	}
	if sig > 0 {
		// The decimal exponent of the leading significant digit.
		adj := e + int64(digitsBefore) - 1
		if digitsBefore == 0 {
			adj = e - int64(leadingFracZeros) - 1
		}
		if adj < -307 || adj > 307 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// smallInt reads the tiny values most ids are (an integer of at most 18
// digits, no sign on zero) without a walk.
func smallInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 19 {
		return 0, false
	}
	neg := raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || neg)) {
		return 0, false
	}
	var n int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// decodedLen returns the length of the bytes that padded standard base64
// text b64 (of a length that is a multiple of 4) holds.
func decodedLen(b64 []byte) int {
	n := base64.StdEncoding.DecodedLen(len(b64))
	if len(b64) > 0 && b64[len(b64)-1] == '=' {
		n--
		if b64[len(b64)-2] == '=' {
			n--
		}
	}
	return n
}

// canonicalShape is the cheap part of the canonical base64 test: a length
// that is a multiple of 4 and no line breaks (which the decoder would skip).
// Decoding with base64.StdEncoding.Strict() then settles it: it rejects
// non-zero padding bits, so text that decodes re-encodes to itself.
func canonicalShape(b []byte) bool {
	return len(b)%4 == 0 && bytes.IndexAny(b, "\r\n") < 0
}

var strictBase64 = base64.StdEncoding.Strict()

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
