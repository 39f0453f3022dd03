package codec

// This file is long because it holds the readers of JSON text that the walk
// and the fused scanner share: spaces, strings and their escapes, and numbers,
// each with its fast path.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Readers of JSON text that the walk (walk.go) and the fused scanner
// (fused.go) share: whitespace, strings and their escapes, numbers.

// skipSpace returns the end of the JSON whitespace at d[i:].
func skipSpace(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainEnd returns the end of the run of plain bytes (printable ASCII but
// a quote and a backslash) at d[i:], 8 bytes at a time.
func plainEnd(d []byte, i int) int {
	for i+8 <= len(d) {
		if m := special8(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(d) && plain[d[i]] {
		i++
	}
	return i
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

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
