// Package jsonrpc is the JSON-RPC 2.0 message model of MCP-Flow: requests,
// notifications, responses, error objects and batches, and their validation.
//
// It knows nothing of encodings or transports. Params, results and error data
// stay raw JSON ([json.RawMessage]) so that fields this package does not know
// survive untouched; ids keep their exact form (see [ID]). The codecs in
// package codec turn bytes into [Envelope]s, and [Validate] turns envelopes
// into messages with the error replies that JSON-RPC 2.0 requires.
package jsonrpc

import (
	"encoding/json"
	"errors"
)

// Message is a JSON-RPC 2.0 message: a *Request or a *Response. The set is
// closed.
type Message interface {
	isMessage()
}

// Request is a request (ID present) or a notification (ID absent), JSON-RPC
// 2.0 §4 and §4.1. Params, when present, is a JSON object or array.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage
}

// IsCall reports whether r expects a response (it has an id).
func (r *Request) IsCall() bool { return r.ID.IsValid() }

// Response is a response, JSON-RPC 2.0 §5: exactly one of Result and Error is
// set. ID is NullID when the request's id could not be determined.
type Response struct {
	ID     ID
	Result json.RawMessage
	Error  *Error
}

func (*Request) isMessage()  {}
func (*Response) isMessage() {}

// Error is a JSON-RPC 2.0 error object (§5.1). It is also the Go error of a
// failed request: errors.Is matches two *Error values with the same Code.
type Error struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

var _ error = (*Error)(nil)

func (e *Error) Error() string {
	if e.Message == "" {
		return "jsonrpc: " + e.Code.String()
	}
	return "jsonrpc: " + e.Message + " (" + itoa(int64(e.Code)) + ")"
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// NewError returns an error object with the given code and message.
func NewError(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// NewRequest returns a request with params marshalled from v (nil v: no
// params).
func NewRequest(id ID, method string, v any) (*Request, error) {
	p, err := marshalParams(v)
	if err != nil {
		return nil, err
	}
	return &Request{ID: id, Method: method, Params: p}, nil
}

// NewResult returns a successful response with result marshalled from v. A
// nil v gives the empty object {}, as MCP's ping expects.
func NewResult(id ID, v any) (*Response, error) {
	if v == nil {
		return &Response{ID: id, Result: json.RawMessage("{}")}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &Response{ID: id, Result: b}, nil
}

// NewErrorResponse returns a failed response.
func NewErrorResponse(id ID, err *Error) *Response {
	if !id.IsValid() {
		id = NullID
	}
	return &Response{ID: id, Error: err}
}

func marshalParams(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
		if string(b) == "null" {
			return nil, nil
		}
		return nil, errors.New("jsonrpc: params must marshal to an object or an array")
	}
	return b, nil
}
