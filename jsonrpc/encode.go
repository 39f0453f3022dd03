package jsonrpc

import "encoding/json"

// AppendJSON appends the compact JSON form of m to dst. Members come in the
// order jsonrpc, id, method, params, result, error. Params, Result and
// Error.Data are copied as they are and must be valid JSON.
func AppendJSON(dst []byte, m Message) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	switch m := m.(type) {
	case *Request:
		if m.ID.IsValid() {
			dst = append(dst, `,"id":`...)
			dst = append(dst, m.ID.raw...)
		}
		dst = append(dst, `,"method":`...)
		dst = appendQuoted(dst, m.Method)
		if len(m.Params) > 0 {
			dst = append(dst, `,"params":`...)
			dst = append(dst, m.Params...)
		}
	case *Response:
		dst = appendResponseID(dst, m.ID)
		if m.Error != nil {
			dst = append(dst, `,"error":`...)
			dst = m.Error.AppendJSON(dst)
		} else {
			dst = append(dst, `,"result":`...)
			if len(m.Result) == 0 {
				dst = append(dst, "{}"...)
			} else {
				dst = append(dst, m.Result...)
			}
		}
	}
	return append(dst, '}')
}

func appendResponseID(dst []byte, id ID) []byte {
	dst = append(dst, `,"id":`...)
	if id.IsValid() {
		return append(dst, id.raw...)
	}
	return append(dst, "null"...)
}

// AppendResultHead appends what AppendJSON writes before the result of a
// successful response with id: {"jsonrpc":"2.0","id":…,"result":. The
// caller appends the result and '}'. A result held in pieces (a splice) is
// so written once, in place; ResultHeadLen is the head's length.
func AppendResultHead(dst []byte, id ID) []byte {
	return append(appendResponseID(append(dst, `{"jsonrpc":"2.0"`...), id), `,"result":`...)
}

// ResultHeadLen returns the length of AppendResultHead's text for id.
func ResultHeadLen(id ID) int {
	n := len(id.raw)
	if !id.IsValid() {
		n = len("null")
	}
	return len(`{"jsonrpc":"2.0","id":,"result":`) + n
}

// AppendBatchJSON appends a batch as a JSON array.
func AppendBatchJSON(dst []byte, batch []Message) []byte {
	dst = append(dst, '[')
	for i, m := range batch {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSON(dst, m)
	}
	return append(dst, ']')
}

// AppendJSON appends the error object as compact JSON.
func (e *Error) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendInt(dst, int64(e.Code))
	dst = append(dst, `,"message":`...)
	dst = appendQuoted(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler.
func (r *Request) MarshalJSON() ([]byte, error) { return AppendJSON(nil, r), nil }

// MarshalJSON implements json.Marshaler.
func (r *Response) MarshalJSON() ([]byte, error) { return AppendJSON(nil, r), nil }

var (
	_ json.Marshaler = (*Request)(nil)
	_ json.Marshaler = (*Response)(nil)
)
