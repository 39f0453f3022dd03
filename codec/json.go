package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mcp-flow/mcp-flow/jsonrpc"
)

// jsonCodec is the JSON encoding (RFC 8259): the form of initialize and of
// every session that negotiates nothing else (spec §4).
//
// Decoding validates the whole payload (syntax, UTF-8, duplicate member
// names) with jsontext and the depth and size limits with a scan of its own;
// the members of the envelopes alias the payload, nothing is copied.
type jsonCodec struct{ lim Limits }

func (c *jsonCodec) Name() Name { return JSON }

func (c *jsonCodec) Append(dst []byte, m jsonrpc.Message) ([]byte, error) {
	return jsonrpc.AppendJSON(dst, m), nil
}

func (c *jsonCodec) AppendBatch(dst []byte, batch []jsonrpc.Message) ([]byte, error) {
	return jsonrpc.AppendBatchJSON(dst, batch), nil
}

// AppendValue checks v against the limits, as the binary encodings do, so
// that what one encoding sends every other can carry.
func (c *jsonCodec) AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	if err := c.checkShape(v, 0); err != nil {
		return dst, encodeErr(JSON, err)
	}
	return append(dst, v...), nil
}

func (c *jsonCodec) DecodeValue(data []byte) (json.RawMessage, error) {
	if err := c.checkSize(data); err != nil {
		return nil, err
	}
	if !jsontext.Value(data).IsValid() {
		return nil, &DecodeError{Encoding: JSON, Offset: -1, Reason: "not a valid JSON value"}
	}
	if err := c.checkShape(data, 0); err != nil { // the value itself is level 1
		return nil, err
	}
	return bytes.Clone(data), nil
}

func (c *jsonCodec) checkSize(data []byte) error {
	if len(data) > c.lim.MaxPayload {
		return &DecodeError{Encoding: JSON, Offset: -1, Reason: "payload of " + strconv.Itoa(len(data)) + " bytes exceeds the limit of " + strconv.Itoa(c.lim.MaxPayload)}
	}
	return nil
}

func (c *jsonCodec) Decode(data []byte) (jsonrpc.Payload, error) {
	if err := c.checkSize(data); err != nil {
		return jsonrpc.Payload{}, err
	}
	// A bytes.Buffer is parsed in place; any other reader is copied into
	// the decoder's buffer first (TestJSONDecodesInPlace).
	d := jsontext.NewDecoder(bytes.NewBuffer(data))
	fail := func(err error) (jsonrpc.Payload, error) {
		var se *jsontext.SyntacticError
		off := -1
		if errors.As(err, &se) {
			off = int(se.ByteOffset)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return jsonrpc.Payload{}, decodeErr(JSON, off, err)
	}
	var p jsonrpc.Payload
	switch d.PeekKind() {
	case '{':
		e, err := c.object(d, data)
		if err != nil {
			return fail(err)
		}
		p.Elems = []jsonrpc.Envelope{e}
	case '[':
		p.Batch = true
		if _, err := d.ReadToken(); err != nil {
			return fail(err)
		}
		for d.PeekKind() != ']' {
			if d.PeekKind() == '{' {
				e, err := c.object(d, data)
				if err != nil {
					return fail(err)
				}
				p.Elems = append(p.Elems, e)
			} else {
				if _, err := d.ReadValue(); err != nil {
					return fail(err)
				}
				p.Elems = append(p.Elems, jsonrpc.Envelope{NotObject: true})
			}
			if len(p.Elems) > c.lim.MaxBatch {
				return fail(errBatch(c.lim))
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return fail(err)
		}
	default:
		if _, err := d.ReadValue(); err != nil {
			return fail(err)
		}
		p.Elems = []jsonrpc.Envelope{{NotObject: true}}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the top-level value")
		}
		return fail(err)
	}
	return p, nil
}

// object reads one message object, slicing each member out of data.
func (c *jsonCodec) object(d *jsontext.Decoder, data []byte) (jsonrpc.Envelope, error) {
	var e jsonrpc.Envelope
	if _, err := d.ReadToken(); err != nil {
		return e, err
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return e, err
		}
		name := tok.String() // the token is void after the next read
		v, err := d.ReadValue()
		if err != nil {
			return e, err
		}
		end := int(d.InputOffset())
		raw := json.RawMessage(data[end-len(v) : end : end])
		var slot *json.RawMessage
		switch name {
		case "jsonrpc":
			slot = &e.JSONRPC
		case "id":
			slot = &e.ID
		case "method":
			slot = &e.Method
		case "params":
			slot = &e.Params
		case "result":
			slot = &e.Result
		case "error":
			slot = &e.Error
		default:
			continue
		}
		if err := c.checkShape(raw, 1); err != nil {
			return e, err
		}
		*slot = raw
	}
	_, err := d.ReadToken()
	return e, err
}

// checkShape enforces MaxDepth, MaxElements and MaxNumberDigits on a valid
// JSON value, at nesting depth base. Strings are skipped with
// bytes.IndexByte, so the scan costs little next to the validation jsontext
// has done.
func (c *jsonCodec) checkShape(b []byte, base int) error {
	var counts [128]int
	depth := base
	digits, inExp := 0, false // of the number being scanned
	for i := 0; i < len(b); i++ {
		switch ch := b[i]; {
		case ch >= '0' && ch <= '9':
			if digits++; !inExp && digits > c.lim.MaxNumberDigits {
				return errNumber(c.lim)
			}
			continue
		case ch == 'e' || ch == 'E':
			inExp = true
			continue
		case ch == '-' || ch == '+' || ch == '.':
			continue
		}
		digits, inExp = 0, false
		switch b[i] {
		case '"':
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				i += 1 + j
				k := i - 1
				for k >= 0 && b[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case '[', '{':
			depth++
			if depth > c.lim.MaxDepth {
				return errTooDeep(c.lim)
			}
			if depth < len(counts) {
				counts[depth] = 0
			}
		case ',':
			if depth < len(counts) {
				counts[depth]++
				if counts[depth] >= c.lim.MaxElements {
					return errTooMany(c.lim)
				}
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

func errTooDeep(l Limits) error {
	return &LimitError{"MaxDepth", l.MaxDepth, "nesting deeper than " + strconv.Itoa(l.MaxDepth) + " levels"}
}

func errTooMany(l Limits) error {
	return &LimitError{"MaxElements", l.MaxElements, "more than " + strconv.Itoa(l.MaxElements) + " elements in one array or object"}
}

func errBatch(l Limits) error {
	return &LimitError{"MaxBatch", l.MaxBatch, "batch of more than " + strconv.Itoa(l.MaxBatch) + " elements"}
}

func errNumber(l Limits) error {
	return &LimitError{"MaxNumberDigits", l.MaxNumberDigits, "number with more than " + strconv.Itoa(l.MaxNumberDigits) + " digits"}
}

// mantissaDigits counts the digits of a JSON number before its exponent.
func mantissaDigits(s []byte) int {
	n := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			n++
		case c == 'e' || c == 'E':
			return n
		}
	}
	return n
}

func errDecoded(l Limits) error {
	return &LimitError{"MaxDecoded", l.MaxDecoded, "payload expands past the limit of " + strconv.Itoa(l.MaxDecoded) + " decoded bytes"}
}
