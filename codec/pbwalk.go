package codec

// fromJSON is walkJSON with a pbWriter as its sink, fused into one loop as
// cborWriter.fromJSON is (cborwalk.go): the input and its position in local
// variables, the writer's methods called directly rather than through the
// sink interface, the rare cases read by the walk's own readers. It reports
// false on anything the walk refuses, and then leaves w as it found it: the
// caller runs walkJSON, which gives the exact error. Every value it accepts,
// walkJSON accepts too, with the same bytes written
// (FuzzFromJSONMatchesWalk).
func (w *pbWriter) fromJSON(raw []byte, lim Limits) bool {
	k := &w.wk
	k.data, k.pos, k.lim, k.s, k.depth = raw, 0, lim, nil, 0
	k.names, k.arena = k.names[:0], k.arena[:0]
	mark, lens, open, ctx := len(w.b), len(w.lens), len(w.open), len(w.ctx)
	if !w.fused(raw, lim) {
		w.b, w.lens, w.open, w.ctx = w.b[:mark], w.lens[:lens], w.open[:open], w.ctx[:ctx]
		return false
	}
	return true
}

// pbFrame is a container open in pbWriter.fromJSON.
type pbFrame struct {
	n   int  // its elements so far
	obj bool // an object
	m   members
}

// fused is fromJSON's loop; see cborWriter.fused, which it follows step by
// step.
func (w *pbWriter) fused(d []byte, lim Limits) bool {
	k := &w.wk
	var frames []pbFrame
	var stack [16]pbFrame // frames for the first 16 levels, on the stack
	frames = stack[:0]
	var top pbFrame // the innermost open container, when depth > 0
	depth := 0
	pos := skipSpace(d, 0)
	var name []byte

value: // a value at pos
	if pos >= len(d) {
		return false
	}
	switch c := d[pos]; c {
	case '"':
		start := pos + 1
		i := plainEnd(d, start)
		if i < len(d) && d[i] == '"' {
			pos = i + 1
			w.str(d[start:i])
			goto after
		}
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return false
		}
		pos = k.pos
		w.str(k.unescaped(raw, esc))
		goto after
	case '{', '[':
		if depth >= lim.MaxDepth {
			return false
		}
		if depth > 0 {
			frames = append(frames, top)
		}
		depth++
		top = pbFrame{obj: c == '{', m: members{first: len(k.names)}}
		if top.obj {
			w.beginObject()
		} else {
			w.beginArray()
		}
		if pos = skipSpace(d, pos+1); pos < len(d) && (d[pos] == '}' && top.obj || d[pos] == ']' && !top.obj) {
			pos++
			w.endContainer()
			goto closed
		}
		if top.n = 1; top.n > lim.MaxElements {
			return false
		}
		if top.obj {
			goto member
		}
		goto value
	case 't':
		if len(d)-pos < 4 || string(d[pos:pos+4]) != "true" {
			return false
		}
		pos += 4
		w.boolean(true)
	case 'f':
		if len(d)-pos < 5 || string(d[pos:pos+5]) != "false" {
			return false
		}
		pos += 5
		w.boolean(false)
	case 'n':
		if len(d)-pos < 4 || string(d[pos:pos+4]) != "null" {
			return false
		}
		pos += 4
		w.null()
	default:
		if c != '-' && c-'0' > 9 {
			return false
		}
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
					w.number(number{kind: numInt, i: int64(v)})
					goto after
				}
				if v != 0 {
					pos = j
					w.number(number{kind: numInt, i: -int64(v)})
					goto after
				}
			} else if d[j] == '.' {
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
					w.number(number{kind: numFloat, f: x})
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
		w.number(num)
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
		w.endContainer()
		goto closed
	}
	if !top.obj && d[pos] == ']' {
		pos++
		w.endContainer()
		goto closed
	}
	return false

closed: // the innermost container closed
	if depth--; depth > 0 {
		top = frames[len(frames)-1]
		frames = frames[:len(frames)-1]
	}
	goto after

member: // a member name at pos
	if pos >= len(d) || d[pos] != '"' {
		return false
	}
	{
		start := pos + 1
		i := plainEnd(d, start)
		if i < len(d) && d[i] == '"' {
			pos = i + 1
			name = d[start:i:i]
		} else {
			k.pos = pos
			raw, esc, err := k.span()
			if err != nil {
				return false
			}
			pos = k.pos
			name = raw
			if esc {
				at := len(k.arena)
				k.arena = k.unescape(k.arena, raw)
				name = k.arena[at:len(k.arena):len(k.arena)]
			}
		}
	}
	if h := nameBit(name); top.n <= smallObject && top.m.seen&h == 0 {
		top.m.seen |= h
		k.names = append(k.names, name)
	} else if k.member(&top.m, top.n, name) {
		return false
	}
	w.key(name)
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
		k.pos = pos
		raw, esc, err := k.span()
		if err != nil {
			return false
		}
		pos = k.pos
		if esc || !canonicalShape(raw) || !w.binary(raw) {
			w.str(k.unescaped(raw, esc))
		}
		goto after
	}
	goto value
}
