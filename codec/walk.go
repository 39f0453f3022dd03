package codec

import (
	"bytes"
	"encoding/base64"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// sink receives a JSON value as events, in order; the binary encoders
// implement it.
type sink interface {
	null()
	boolean(bool)
	number(number)
	str(string)
	// binary is offered the text of a string held by a member named "data"
	// or "blob" (MCP's image/audio data and resource blobs). If it is
	// canonical standard base64 (it decodes, and re-encodes to exactly
	// itself), the sink takes it as raw bytes and reports true; else it
	// takes nothing and the string is sent to str.
	binary(b64 []byte) bool
	beginArray()
	endArray(n int)
	beginObject()
	key(string)
	endObject(n int)
}

// isBinaryKey names the members whose base64 strings travel as bytes.
func isBinaryKey(k string) bool { return k == "data" || k == "blob" }

// walkJSON reads one JSON value from raw and replays it into s. It enforces
// lim's depth, element and number limits; jsontext validates the syntax, UTF-8 and
// duplicate member names.
func walkJSON(raw []byte, lim Limits, s sink) error {
	d := jsontext.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj      bool
		n        int
		wantName bool
		key      string
	}
	stack := make([]frame, 0, 16)
	for {
		// A base64 member's value is read raw, so that it is never copied
		// as a Go string first.
		if k := len(stack); k > 0 && stack[k-1].obj && !stack[k-1].wantName && isBinaryKey(stack[k-1].key) && d.PeekKind() == '"' {
			v, err := d.ReadValue()
			if err != nil {
				return err
			}
			top := &stack[k-1]
			top.wantName = true
			if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && canonicalShape(inner) && s.binary(inner) {
				continue
			}
			str, err := jsontext.AppendUnquote(nil, v)
			if err != nil {
				return err
			}
			s.str(string(str))
			continue
		}
		tok, err := d.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		kind := tok.Kind()
		if k := len(stack); k > 0 && stack[k-1].obj && stack[k-1].wantName && kind != '}' {
			top := &stack[k-1]
			top.key = tok.String()
			top.wantName = false
			top.n++
			if top.n > lim.MaxElements {
				return errTooMany(lim)
			}
			s.key(top.key)
			continue
		}
		if k := len(stack); k > 0 {
			top := &stack[k-1]
			if top.obj {
				top.wantName = true
			} else if kind != ']' {
				top.n++
				if top.n > lim.MaxElements {
					return errTooMany(lim)
				}
			}
		}
		switch kind {
		case 'n':
			s.null()
		case 't', 'f':
			s.boolean(kind == 't')
		case '"':
			s.str(tok.String())
		case '0':
			t := tok.String()
			if mantissaDigits([]byte(t)) > lim.MaxNumberDigits {
				le := errNumber(lim)
				return &EncodeError{Reason: le.Error(), Err: le}
			}
			n, ok := classify(t)
			if !ok {
				return &EncodeError{Reason: "number " + clip(t) + " has an exponent beyond 64 bits"}
			}
			s.number(n)
		case '[', '{':
			if len(stack) >= lim.MaxDepth {
				return errTooDeep(lim)
			}
			stack = append(stack, frame{obj: kind == '{', wantName: kind == '{'})
			if kind == '[' {
				s.beginArray()
			} else {
				s.beginObject()
			}
		case ']', '}':
			n := stack[len(stack)-1].n
			stack = stack[:len(stack)-1]
			if kind == ']' {
				s.endArray(n)
			} else {
				s.endObject(n)
			}
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].wantName = true
			}
		}
	}
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
