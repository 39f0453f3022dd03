package jsonrpc

import "encoding/json"

// Envelope is one decoded but not yet validated JSON-RPC message, as a codec
// produces it: each top-level member as JSON text, nil when absent. A codec
// fills NotObject instead when the value is not an object at all (for example
// a number inside a batch).
//
// Params, Result and Data are taken over as they are: a codec must only put
// valid JSON text in them.
type Envelope struct {
	NotObject bool
	JSONRPC   json.RawMessage
	ID        json.RawMessage
	Method    json.RawMessage
	Params    json.RawMessage
	Result    json.RawMessage
	Error     json.RawMessage
}

// Payload is the content of one frame: a single message, or a batch (JSON-RPC
// 2.0 §6) of any number of elements.
type Payload struct {
	Batch bool
	Elems []Envelope
}

// Validate checks a decoded payload against JSON-RPC 2.0 and returns the valid
// messages in order together with the error responses that §5 and §6 require
// for the invalid ones:
//
//   - an empty batch: one -32600 response with a null id;
//   - an element that is not a valid request or response: a -32600 response,
//     with its id when one can be read, else null;
//   - a batch of notifications only: no responses at all.
//
// Validate never fails as a whole: a peer that sends a bad message gets an
// answer and the rest of the payload is still delivered.
func Validate(p Payload) (msgs []Message, replies []*Response) {
	if p.Batch && len(p.Elems) == 0 {
		return nil, []*Response{NewErrorResponse(NullID, NewError(CodeInvalidRequest, "empty batch"))}
	}
	msgs = make([]Message, 0, len(p.Elems))
	for i := range p.Elems {
		m, rerr := ValidateOne(&p.Elems[i])
		switch {
		case rerr != nil:
			replies = append(replies, rerr)
		case m != nil:
			msgs = append(msgs, m)
		}
		// Neither: an invalid response, which JSON-RPC never answers.
	}
	return msgs, replies
}

// ValidateOne validates one envelope. When it is invalid, it returns the
// response the sender is owed (always with CodeInvalidRequest), or nil for an
// invalid response: JSON-RPC never answers a response.
func ValidateOne(e *Envelope) (Message, *Response) {
	if e.NotObject {
		return nil, NewErrorResponse(NullID, NewError(CodeInvalidRequest, "message is not a JSON object"))
	}
	// Read the id first, so that an error reply can carry it.
	id := ID{}
	var idErr error
	if e.ID != nil {
		id, idErr = ParseID(e.ID)
	}
	fail := func(msg string) (Message, *Response) {
		if idErr != nil || id.IsNull() {
			id = NullID
		}
		return nil, NewErrorResponse(id, NewError(CodeInvalidRequest, msg))
	}
	if !isVersion2(e.JSONRPC) {
		return fail(`"jsonrpc" must be exactly "2.0"`)
	}
	if idErr != nil {
		return fail(idErr.(*Error).Message)
	}
	if e.Method != nil {
		method, ok := unquote(e.Method)
		if !ok {
			return fail(`"method" must be a string`)
		}
		if e.Result != nil || e.Error != nil {
			return fail(`a request must not carry "result" or "error"`)
		}
		if id.IsNull() {
			return fail("a request id must not be null")
		}
		if e.Params != nil && !isStructured(e.Params) {
			return fail(`"params" must be an object or an array`)
		}
		return &Request{ID: id, Method: method, Params: e.Params}, nil
	}
	// A response. Nothing is ever sent back for a bad one, but the caller is
	// told through a nil message and a nil reply.
	if !id.IsValid() || (e.Result == nil) == (e.Error == nil) {
		return nil, nil
	}
	if e.Result != nil {
		if id.IsNull() {
			return nil, nil
		}
		return &Response{ID: id, Result: e.Result}, nil
	}
	var eo struct {
		Code    *json.Number    `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal(e.Error, &eo) != nil || eo.Code == nil || eo.Message == nil {
		return nil, nil
	}
	code, err := eo.Code.Int64()
	if err != nil {
		return nil, nil
	}
	return &Response{ID: id, Error: &Error{Code: Code(code), Message: *eo.Message, Data: eo.Data}}, nil
}

func isVersion2(b json.RawMessage) bool {
	if string(b) == `"2.0"` {
		return true
	}
	s, ok := unquote(b)
	return ok && s == "2.0"
}

func isStructured(b json.RawMessage) bool {
	b = trimSpace(b)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}
