package codec

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// cborFrame is a container open in cborWriter.fromJSON.
type cborFrame struct {
	head int  // offset of its one-byte head in the output
	n    int  // its elements so far
	obj  bool // an object
	m    members
}

// fromJSON is walkJSON with a cborWriter as its sink, fused into one loop
// that keeps the input, its position and the output in local variables:
// no call per token through the sink interface, a string with no escape
// and no non-ASCII byte found 8 bytes at a time and copied as one slice
// behind its head, a small integer read and written in place, a
// container's head filled in when it closes. The rare cases (escapes,
// non-ASCII text, other numbers, base64 members, many members) use the
// walk's own readers.
//
// It reports false on anything the walk refuses, and then leaves w as it
// found it: the caller runs walkJSON, which gives the exact error. Every
// value it accepts, walkJSON accepts too, with the same bytes written
// (FuzzFromJSONMatchesWalk).
func (w *cborWriter) fromJSON(raw []byte, lim Limits) bool {
	k := &w.wk
	k.data, k.pos, k.lim, k.s, k.depth = raw, 0, lim, nil, 0
	k.names, k.arena = k.names[:0], k.arena[:0]
	mark := len(w.b)
	b, ok := w.fused(raw, lim)
	if !ok {
		w.b = w.b[:mark]
		return false
	}
	w.b = b
	return true
}

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

// appendTextHead appends the head of a text string of n bytes.
func appendTextHead(b []byte, n int) []byte {
	if n < 24 {
		return append(b, 0x60|byte(n))
	}
	return appendHead(b, 3, uint64(n))
}

// closeHead fills in the head at b[at] of a container of n elements
// (major type major); when n ≥ 24 the head needs more bytes and the
// contents shift right.
func closeHead(b []byte, at int, major byte, n int) []byte {
	if n < 24 {
		b[at] = major<<5 | byte(n)
		return b
	}
	var hb [9]byte
	h := appendHead(hb[:0], major, uint64(n))
	extra := len(h) - 1
	b = grow(b, extra)
	copy(b[at+1+extra:], b[at+1:len(b)-extra])
	copy(b[at:], h)
	return b
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fused is fromJSON's loop. It returns the output and whether the walk
// accepted raw.
func (w *cborWriter) fused(d []byte, lim Limits) ([]byte, bool) {
	k := &w.wk
	// Room for the output in one go: strings are copied 8 bytes at a time
	// into the room past the output's end when there is enough of it.
	b := w.b
	if cap(b)-len(b) < len(d)+16 {
		b = grow(b, len(d)+16)[:len(b)]
	}
	frames := w.frames[:0]
	defer func() { w.frames = frames[:0] }()
	var top cborFrame // the innermost open container, when depth > 0
	depth := 0
	pos := skipSpace(d, 0)
	var name []byte // the member name just read
	var key bool    // the string at pos is a member name

value: // a value at pos
	if pos >= len(d) {
		return b, false
	}
	switch c := d[pos]; c {
	case '"':
		key = false
		goto text
	case '{', '[':
		if depth >= lim.MaxDepth {
			return b, false
		}
		if depth > 0 {
			frames = append(frames, top)
		}
		depth++
		top = cborFrame{head: len(b), obj: c == '{', m: members{first: len(k.names)}}
		b = append(b, 0xa0) // the head's major type and count are set on close
		if pos = skipSpace(d, pos+1); pos < len(d) && (d[pos] == '}' && top.obj || d[pos] == ']' && !top.obj) {
			pos++
			b = closeHead(b, top.head, 5-b2byte(!top.obj), 0)
			goto closed
		}
		if top.n = 1; top.n > lim.MaxElements {
			return b, false
		}
		if top.obj {
			goto member
		}
		goto value
	case 't':
		if len(d)-pos < 4 || string(d[pos:pos+4]) != "true" {
			return b, false
		}
		pos += 4
		b = append(b, 0xf5)
	case 'f':
		if len(d)-pos < 5 || string(d[pos:pos+5]) != "false" {
			return b, false
		}
		pos += 5
		b = append(b, 0xf4)
	case 'n':
		if len(d)-pos < 4 || string(d[pos:pos+4]) != "null" {
			return b, false
		}
		pos += 4
		b = append(b, 0xf6)
	default:
		if c != '-' && c-'0' > 9 {
			return b, false
		}
		// An integer of at most 18 digits, and a fraction of at most 15
		// digits with no exponent, are read here; any other number by
		// the walk's reader.
		i := pos + b2i(c == '-')
		j := i
		var v uint64
		for j < len(d) && d[j]-'0' <= 9 {
			v = v*10 + uint64(d[j]-'0')
			j++
		}
		n := j - i
		if n > 0 && n <= 18 && n <= lim.MaxNumberDigits && (d[i] != '0' || n == 1) {
			if j == len(d) || (d[j] != '.' && d[j] != 'e' && d[j] != 'E') {
				if c != '-' {
					pos = j
					b = appendHead(b, 0, v)
					goto after
				}
				if v != 0 {
					pos = j
					b = appendHead(b, 1, v-1)
					goto after
				}
			} else if d[j] == '.' {
				// The fraction: mantissa v and fd digits after the point.
				// Both float64(v) (v < 10^15 < 2^53) and 10^fd are exact,
				// so their quotient is the float64 nearest the decimal, as
				// strconv.ParseFloat gives it (shortFloat's case).
				f := j + 1
				for f < len(d) && d[f]-'0' <= 9 {
					v = v*10 + uint64(d[f]-'0')
					f++
				}
				if fd := f - j - 1; fd > 0 && n+fd <= 15 && n+fd <= lim.MaxNumberDigits &&
					(f == len(d) || (d[f] != 'e' && d[f] != 'E')) {
					x := float64(v) / pow10[fd]
					if c == '-' {
						x = -x
					}
					pos = f
					b = appendFloatCBOR(b, x)
					goto after
				}
			}
		}
		k.pos = pos
		num, err := k.numberValue()
		if err != nil {
			return b, false
		}
		pos = k.pos
		w.b = b
		w.number(num)
		b = w.b
	}

after: // a value ended at pos
	if depth == 0 {
		if skipSpace(d, pos) != len(d) {
			return b, false
		}
		return b, true
	}
	if pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos >= len(d) {
		return b, false
	}
	if d[pos] == ',' {
		if pos++; pos < len(d) && d[pos] <= ' ' {
			pos = skipSpace(d, pos)
		}
		if top.n++; top.n > lim.MaxElements {
			return b, false
		}
		if top.obj {
			goto member
		}
		goto value
	}
	if top.obj && d[pos] == '}' {
		k.names = k.names[:top.m.first]
		if top.m.first == 0 {
			k.arena = k.arena[:0]
		}
		pos++
		b = closeHead(b, top.head, 5, top.n)
		goto closed
	}
	if !top.obj && d[pos] == ']' {
		pos++
		b = closeHead(b, top.head, 4, top.n)
		goto closed
	}
	return b, false

closed: // the innermost container closed
	if depth--; depth > 0 {
		top = frames[len(frames)-1]
		frames = frames[:len(frames)-1]
	}
	goto after

member: // a member name at pos
	if pos >= len(d) || d[pos] != '"' {
		return b, false
	}
	key = true

text: // the string at pos, written as a text string; a name also kept in name
	{
		start, o := pos+1, len(b)
		if cap(b)-o > len(d)-start+9 {
			// Copy 8 bytes at a time to the first that needs a look,
			// behind a one-byte head: the room checked above holds any
			// string that is left, and 8 bytes more.
			out := b[o+1 : cap(b)]
			i := start
			utf := -1 // the first byte of a non-ASCII character
		words:
			for i+8 <= len(d) {
				x := binary.LittleEndian.Uint64(d[i:])
				binary.LittleEndian.PutUint64(out[i-start:], x)
				if m := special8(x); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					goto scanned
				}
				i += 8
			}
			for i < len(d) && plain[d[i]] {
				out[i-start] = d[i]
				i++
			}
		scanned:
			if i < len(d) && d[i] >= 0x80 {
				// Non-ASCII text is copied too, and checked as UTF-8 once
				// the string ends.
				if utf < 0 {
					utf = i
				}
				for i < len(d) && d[i] >= 0x80 {
					out[i-start] = d[i]
					i++
				}
				goto words
			}
			if i < len(d) && d[i] == '"' && (utf < 0 || utf8.Valid(d[utf:i])) {
				pos = i + 1
				n := i - start
				if b = b[:o+1+n]; n < 24 {
					b[o] = 0x60 | byte(n)
				} else {
					b = closeHead(b, o, 3, n)
				}
				if key {
					name = d[start:i:i]
					goto named
				}
				goto after
			}
		}
		// Escapes, non-ASCII text, an error, or no room: the walk's own
		// reader.
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return b, false
		}
		pos = k.pos
		s := raw
		if esc && key {
			at := len(k.arena)
			k.arena = k.unescape(k.arena, raw)
			s = k.arena[at:len(k.arena):len(k.arena)]
		} else if esc {
			s = k.unescaped(raw, esc)
		}
		b = appendTextHead(b[:o], len(s))
		b = append(b, s...)
		if !key {
			goto after
		}
		name = s
	}

named: // a member name was read, and written
	if h := nameBit(name); top.n <= smallObject && top.m.seen&h == 0 {
		top.m.seen |= h
		k.names = append(k.names, name)
	} else if k.member(&top.m, top.n, name) {
		return b, false
	}
	if pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos >= len(d) || d[pos] != ':' {
		return b, false
	}
	if pos++; pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos < len(d) && d[pos] == '"' && isBinaryKey(name) {
		// As walker.object: the base64 text as it is, to binary.
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return b, false
		}
		pos = k.pos
		w.b = b
		if esc || !canonicalShape(raw) || !w.binary(raw) {
			s := k.unescaped(raw, esc)
			w.b = appendTextHead(w.b, len(s))
			w.b = append(w.b, s...)
		}
		b = w.b
		goto after
	}
	goto value
}

func b2byte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
