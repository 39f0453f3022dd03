package codec

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The fused scanner: walkJSON and a binary writer in one loop (spec §4.4).
//
// walkJSON (walk.go) calls its sink once per token through an interface,
// and its readers keep the input and the position in the walker. fuse keeps
// them in local variables, reads the common cases itself (a string with no
// escape, found 8 bytes at a time; a small integer; a short fraction) and
// leaves the rare ones to the walk's readers. It writes CBOR or protobuf:
// each write in its loop is a switch on the writer's concrete type, `if cw
// != nil { CBOR } else { protobuf }`, written out at the call site, so that
// the compiler inlines it. (An interface, or a type parameter, would cost an
// indirect call per token: Go compiles every pointer type argument as one
// shape. Methods on a struct of both writers are too large to inline: they
// cost 16% more instructions for CBOR, 13% for protobuf, on a tools/list
// result of 50 tools.) For CBOR a string with no escape is copied while it
// is scanned, behind its one-byte head.
//
// fuse reports false on anything the walk refuses, and the writer's
// fromJSON then rolls back what was written; its caller runs walkJSON, which
// gives the exact error. Every value it accepts, walkJSON accepts too, with
// the same bytes written (FuzzFromJSONMatchesWalk).
//
// A new binary encoding adds its writer to fusedOut, a branch at each write
// in fuse, and its writer to FuzzFromJSONMatchesWalk.

// fusedOut is the writer fuse writes to: exactly one field is set. Its
// methods serve the rare writes; fuse writes the common ones itself.
type fusedOut struct {
	cbor *cborWriter
	pb   *pbWriter
}

func (o fusedOut) number(n number) {
	if o.cbor != nil {
		o.cbor.number(n)
	} else {
		o.pb.number(n)
	}
}

func (o fusedOut) str(s []byte) {
	if o.cbor != nil {
		o.cbor.str(s)
	} else {
		o.pb.str(s)
	}
}

func (o fusedOut) key(s []byte) {
	if o.cbor != nil {
		o.cbor.key(s)
	} else {
		o.pb.key(s)
	}
}

func (o fusedOut) binary(b64 []byte) bool {
	if o.cbor != nil {
		return o.cbor.binary(b64)
	}
	return o.pb.binary(b64)
}

// fusedFrame is a container open in fuse.
type fusedFrame struct {
	head int  // CBOR: the offset of its one-byte head in the output
	n    int  // its elements so far
	obj  bool // an object
	m    members
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fuse writes the one JSON value in d to o, with k's buffers, and reports
// whether walkJSON accepts d under lim. On false, o holds a partial value
// that the caller rolls back. For CBOR, o.cbor.b should have room for d
// and 16 bytes more (cborWriter.fromJSON makes it): a string copied while
// it is scanned needs it, else it takes the walk's reader.
func fuse(o fusedOut, k *walker, d []byte, lim Limits) bool {
	cw, pw := o.cbor, o.pb
	k.data, k.pos, k.lim, k.s, k.depth = d, 0, lim, nil, 0
	k.names, k.arena = k.names[:0], k.arena[:0]
	frames := k.frames[:0]
	defer func() { k.frames = frames[:0] }()
	var top fusedFrame // the innermost open container, when depth > 0
	depth := 0
	pos := skipSpace(d, 0)
	var name []byte // the member name just read
	var key bool    // the string at pos is a member name

value: // a value at pos
	if pos >= len(d) {
		return false
	}
	switch c := d[pos]; c {
	case '"':
		key = false
		goto text
	case '{', '[':
		if depth >= lim.MaxDepth {
			return false
		}
		if depth > 0 {
			frames = append(frames, top)
		}
		depth++
		obj := c == '{'
		top = fusedFrame{obj: obj, m: members{first: len(k.names)}}
		if cw != nil {
			top.head = len(cw.b)
			cw.b = append(cw.b, 0xa0) // the major type and count are set on close
		} else if obj {
			pw.beginObject()
		} else {
			pw.beginArray()
		}
		if pos = skipSpace(d, pos+1); pos < len(d) && (d[pos] == '}' && obj || d[pos] == ']' && !obj) {
			pos++
			goto close
		}
		if top.n = 1; top.n > lim.MaxElements {
			return false
		}
		if obj {
			goto member
		}
		goto value
	case 't', 'f', 'n':
		lit, head := "null", byte(0xf6) // CBOR's simple values 22, 21, 20
		if c == 't' {
			lit, head = "true", 0xf5
		} else if c == 'f' {
			lit, head = "false", 0xf4
		}
		if len(d)-pos < len(lit) || string(d[pos:pos+len(lit)]) != lit {
			return false
		}
		pos += len(lit)
		switch {
		case cw != nil:
			cw.b = append(cw.b, head)
		case c == 'n':
			pw.null()
		default:
			pw.boolean(c == 't')
		}
	default:
		if c != '-' && c-'0' > 9 {
			return false
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
				if c != '-' || v != 0 { // -0 is a float
					pos = j
					switch {
					case cw != nil && c != '-':
						cw.b = appendHead(cw.b, 0, v)
					case cw != nil:
						cw.b = appendHead(cw.b, 1, v-1)
					case c != '-':
						pw.number(number{kind: numInt, i: int64(v)})
					default:
						pw.number(number{kind: numInt, i: -int64(v)})
					}
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
					if cw != nil {
						cw.b = appendFloatCBOR(cw.b, x)
					} else {
						pw.number(number{kind: numFloat, f: x})
					}
					goto after
				}
			}
		}
		k.pos = pos
		num, err := k.numberValue()
		if err != nil {
			return false
		}
		pos = k.pos
		o.number(num)
	}

after: // a value ended at pos
	if depth == 0 {
		return skipSpace(d, pos) == len(d)
	}
	if pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos >= len(d) {
		return false
	}
	if d[pos] == ',' {
		if pos++; pos < len(d) && d[pos] <= ' ' {
			pos = skipSpace(d, pos)
		}
		if top.n++; top.n > lim.MaxElements {
			return false
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
		goto close
	}
	if !top.obj && d[pos] == ']' {
		pos++
		goto close
	}
	return false

close: // the innermost container, of top.n elements, ends
	if cw != nil {
		cw.b = closeHead(cw.b, top.head, 5-byte(b2i(!top.obj)), top.n)
	} else {
		pw.endContainer()
	}
	if depth--; depth > 0 {
		top = frames[len(frames)-1]
		frames = frames[:len(frames)-1]
	}
	goto after

member: // a member name at pos
	if pos >= len(d) || d[pos] != '"' {
		return false
	}
	key = true

text: // the string at pos, written; a member name also kept in name
	if start := pos + 1; cw != nil {
		// CBOR: copied 8 bytes at a time to the first byte that needs a
		// look, behind a one-byte head, into the room past the output's
		// end, and made part of the output once the string ends.
		b := cw.b
		at := len(b)
		if cap(b)-at <= len(d)-start+9 {
			goto slow // the output grew past the room fromJSON made
		}
		out := b[at+1 : cap(b)] // holds any string that is left, and 8 bytes more
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
			// Non-ASCII text is copied too, and checked as UTF-8 once the
			// string ends.
			if utf < 0 {
				utf = i
			}
			for i < len(d) && d[i] >= 0x80 {
				out[i-start] = d[i]
				i++
			}
			goto words
		}
		if i >= len(d) || d[i] != '"' || (utf >= 0 && !utf8.Valid(d[utf:i])) {
			goto slow
		}
		n := i - start
		if b = b[:at+1+n]; n < 24 {
			b[at] = 0x60 | byte(n)
		} else {
			b = closeHead(b, at, 3, n)
		}
		cw.b = b
		pos = i + 1
		if !key {
			goto after
		}
		name = d[start:i:i]
	} else {
		// Protobuf: a plain ASCII string, found 8 bytes at a time.
		i := plainEnd(d, start)
		if i >= len(d) || d[i] != '"' {
			goto slow
		}
		pos = i + 1
		if !key {
			pw.str(d[start:i])
			goto after
		}
		name = d[start:i:i]
		pw.key(name)
	}
	goto named

slow: // escapes, non-ASCII text for protobuf, an error: the walk's reader
	{
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return false
		}
		pos = k.pos
		if !key {
			o.str(k.unescaped(raw, esc))
			goto after
		}
		name = raw
		if esc {
			at := len(k.arena)
			k.arena = k.unescape(k.arena, raw)
			name = k.arena[at:len(k.arena):len(k.arena)]
		}
		o.key(name)
	}

named: // a member name was read, and written (a duplicate is refused with it)
	if h := nameBit(name); top.n <= smallObject && top.m.seen&h == 0 {
		top.m.seen |= h
		k.names = append(k.names, name)
	} else if k.member(&top.m, top.n, name) {
		return false
	}
	if pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos >= len(d) || d[pos] != ':' {
		return false
	}
	if pos++; pos < len(d) && d[pos] <= ' ' {
		pos = skipSpace(d, pos)
	}
	if pos < len(d) && d[pos] == '"' && isBinaryKey(name) {
		// As walker.object: the base64 text as it is, to binary.
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return false
		}
		pos = k.pos
		if esc || !canonicalShape(raw) || !o.binary(raw) {
			o.str(k.unescaped(raw, esc))
		}
		goto after
	}
	goto value
}
