package mcpjson

// Splice is a text with some of its spans replaced, not yet written out:
// AppendTo writes it once, wherever the writer wants it (a front writes
// it straight into its output frame, spec §10). The zero Splice is empty;
// NewSplice starts one over a text.
type Splice struct {
	src   []byte
	edits []spliceEdit
	size  int
}

type spliceEdit struct {
	start, end int
	with       []byte
	sub        *Splice // written in place of with, when set
}

// NewSplice returns a splice of src with nothing replaced yet. src is not
// copied, and must not change until the splice is written.
func NewSplice(src []byte) *Splice { return &Splice{src: src, size: len(src)} }

// Replace replaces src[start:end] with with (start == end inserts).
// Replacements go in the order of their spans, and spans do not overlap:
// Replace panics otherwise, as it does for a span outside src.
func (s *Splice) Replace(start, end int, with []byte) {
	s.replace(spliceEdit{start: start, end: end, with: with}, len(with))
}

// ReplaceSplice replaces src[start:end] with the spliced text of sub, as
// Replace does; sub is written when s is, and must not change until then.
func (s *Splice) ReplaceSplice(start, end int, sub *Splice) {
	s.replace(spliceEdit{start: start, end: end, sub: sub}, sub.Len())
}

func (s *Splice) replace(e spliceEdit, n int) {
	last := 0
	if k := len(s.edits); k > 0 {
		last = s.edits[k-1].end
	}
	if e.start < last || e.end < e.start || e.end > len(s.src) {
		panic("mcpjson: Splice.Replace out of order or out of range")
	}
	s.edits = append(s.edits, e)
	s.size += n - (e.end - e.start)
}

// Changed reports whether anything was replaced.
func (s *Splice) Changed() bool { return len(s.edits) > 0 }

// Len returns the length of the spliced text.
func (s *Splice) Len() int { return s.size }

// AppendTo appends the spliced text to dst.
func (s *Splice) AppendTo(dst []byte) []byte {
	last := 0
	for _, e := range s.edits {
		dst = append(dst, s.src[last:e.start]...)
		if e.sub != nil {
			dst = e.sub.AppendTo(dst)
		} else {
			dst = append(dst, e.with...)
		}
		last = e.end
	}
	return append(dst, s.src[last:]...)
}

// Bytes returns the spliced text: src itself when nothing was replaced,
// else a new buffer of exactly Len bytes.
func (s *Splice) Bytes() []byte {
	if !s.Changed() {
		return s.src
	}
	return s.AppendTo(make([]byte, 0, s.size))
}
