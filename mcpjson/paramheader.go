package mcpjson

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The Mcp-Param-* headers of MCP 2026-07-28 (spec §10 "Eras", §11.6): a
// tool's inputSchema may annotate a property with "x-mcp-header": "Name",
// and a tools/call of that tool over Streamable HTTP then carries the
// argument's value as the header Mcp-Param-Name. The rules are the
// transports spec's (2026-07-28 basic/transports/streamable-http, "Custom
// Headers from Tool Parameters", "Value Encoding", "Server Validation";
// SEP-2243), as the go-sdk v1.8 implements them (mcp/streamable_headers.go:
// generateParamHeaders, validateParamHeaders).

// ParamHeaderPrefix begins every header an x-mcp-header names.
const ParamHeaderPrefix = "Mcp-Param-"

// ParamHeader is one x-mcp-header annotation of a tool's inputSchema.
type ParamHeader struct {
	// Path is the chain of properties keys from the schema's root to the
	// annotated property.
	Path []string
	// Name is the annotation's value: the header is ParamHeaderPrefix+Name.
	Name string
}

// ToolsParamHeaders reads a tools/list result and returns the annotations
// of each tool that has any, by tool name. A tool whose annotations break
// the spec's constraints is left out (no header is sent or expected for
// it), as is everything when result is not a tools/list result.
func ToolsParamHeaders(result []byte) map[string][]ParamHeader {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	out := map[string][]ParamHeader{}
	for _, t := range r.Tools {
		if ps, err := ParamHeaders(t.InputSchema); err == nil && len(ps) > 0 {
			out[t.Name] = ps
		}
	}
	return out
}

// InvalidTool is a tool of a tools/list result whose x-mcp-header
// annotations break the spec's constraints, and why (ParamHeaders).
type InvalidTool struct {
	Name string
	Err  error
}

// DropInvalidTools returns a tools/list result without the tools whose
// x-mcp-header annotations break the spec's constraints, as a 2026-07-28
// Streamable HTTP client must exclude them (transports 2026-07-28, "Client
// Behavior"; go-sdk v1.8's filterValidTools), and the tools it dropped. The
// other tools and members keep their bytes; result comes back as it was
// when nothing is dropped or it is no tools/list result.
func DropInvalidTools(result []byte) ([]byte, []InvalidTool) {
	ms, err := ReadObject(result, nil)
	if err != nil {
		return result, nil
	}
	tools := Find(ms, "tools")
	if tools == nil || len(tools.Value) == 0 || tools.Value[0] != '[' {
		return result, nil
	}
	var (
		kept    = []byte{'['}
		dropped []InvalidTool
	)
	err = eachElement(tools.Value, func(e []byte) error {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(e, &t) == nil {
			if _, err := ParamHeaders(t.InputSchema); err != nil {
				dropped = append(dropped, InvalidTool{Name: t.Name, Err: err})
				return nil
			}
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, e...)
		return nil
	})
	if err != nil || len(dropped) == 0 {
		return result, nil
	}
	out, err := EditObject(result, Set("tools", append(kept, ']')))
	if err != nil {
		return result, nil
	}
	return out, dropped
}

// ParamHeaders returns the x-mcp-header annotations of an inputSchema, or
// why they break the spec's constraints ("Schema Extension"): a non-empty
// token (RFC 9110 tchar), case-insensitively unique, on a string, integer
// or boolean property reached from the root through properties keys only.
func ParamHeaders(schema []byte) ([]ParamHeader, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var out []ParamHeader
	seen := map[string]bool{}
	// walk reads one schema object at path; reachable says whether it is
	// reached through properties keys only.
	var walk func(v []byte, path []string, reachable bool) error
	walk = func(v []byte, path []string, reachable bool) error {
		if len(v) == 0 || (v[0] != '{' && v[0] != '[') {
			return nil
		}
		if v[0] == '[' {
			return eachElement(v, func(e []byte) error { return walk(e, path, false) })
		}
		ms, err := ReadObject(v, nil)
		if err != nil {
			return err
		}
		where := strings.Join(path, ".")
		if h := Find(ms, "x-mcp-header"); h != nil {
			if !reachable || len(path) == 0 {
				return fmt.Errorf("x-mcp-header at %q is not reached through properties keys only", where)
			}
			b, _ := Unquote(h.Value)
			name := string(b)
			if err := checkToken(name); err != nil {
				return fmt.Errorf("property %q: %w", where, err)
			}
			if t := String(ms, "type"); t != "string" && t != "integer" && t != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header on type %q (string, integer or boolean only)", where, t)
			}
			if seen[strings.ToLower(name)] {
				return fmt.Errorf("property %q: x-mcp-header %q twice (case-insensitively)", where, name)
			}
			seen[strings.ToLower(name)] = true
			out = append(out, ParamHeader{Path: path, Name: name})
		}
		for _, m := range ms {
			if m.Name != "properties" || len(m.Value) == 0 || m.Value[0] != '{' {
				if err := walk(m.Value, path, false); err != nil {
					return err
				}
				continue
			}
			props, err := ReadObject(m.Value, nil)
			if err != nil {
				return err
			}
			for _, pm := range props {
				if err := walk(pm.Value, append(path[:len(path):len(path)], pm.Name), reachable); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(schema, nil, true)
}

// eachElement calls f with each element of the JSON array v.
func eachElement(v []byte, f func(e []byte) error) error {
	d := newDecoder(v)
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() != ']' {
		e, err := d.ReadValue()
		if err != nil {
			return err
		}
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}

// IsParamHeader reports whether the header name h is an Mcp-Param-{Name}
// header (the prefix in any case, Name a non-empty token): what a
// browser's CORS preflight may ask for on a tools/call (spec §11.6).
func IsParamHeader(h string) bool {
	if len(h) <= len(ParamHeaderPrefix) || !strings.EqualFold(h[:len(ParamHeaderPrefix)], ParamHeaderPrefix) {
		return false
	}
	return checkToken(h[len(ParamHeaderPrefix):]) == nil
}

// checkToken reports whether name is an HTTP field-name token (1*tchar).
func checkToken(name string) error {
	if name == "" {
		return fmt.Errorf("x-mcp-header must be a non-empty string")
	}
	for _, c := range name { // runes: a reason names the character, not its first byte
		alnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", c) {
			return fmt.Errorf("x-mcp-header %q has %q, not a token character", name, c)
		}
	}
	return nil
}

// argument returns the value at path in a tools/call's arguments object, or
// nil when there is none (a null value counts as none: "Parameter value is
// null", the header is omitted and not expected).
func argument(args []byte, path []string) []byte {
	v := args
	for _, k := range path {
		ms, err := ReadObject(v, nil)
		if err != nil {
			return nil
		}
		m := Find(ms, k)
		if m == nil {
			return nil
		}
		v = m.Value
	}
	if string(v) == "null" {
		return nil
	}
	return v
}

// maxSafeInteger bounds the integers an x-mcp-header may carry (the
// JavaScript safe range, "Schema Extension").
const maxSafeInteger = 1<<53 - 1

// primitive returns a JSON value as a header's text before encoding
// ("Value Encoding", type conversion): a string as it is, a boolean as
// true/false, an integer in the safe range in decimal; false for anything
// else.
func primitive(v []byte) (string, bool) {
	if s, ok := Unquote(v); ok {
		return string(s), true
	}
	switch string(v) {
	case "true", "false":
		return string(v), true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// ParamHeaderValues returns the Mcp-Param-* headers of a tools/call whose
// arguments are args, for the tool's annotations ps ("Client Behavior"):
// full header name to encoded value; an argument absent, null or not a
// primitive gets no header.
func ParamHeaderValues(ps []ParamHeader, args []byte) map[string]string {
	var out map[string]string
	for _, p := range ps {
		v := argument(args, p.Path)
		if v == nil {
			continue
		}
		s, ok := primitive(v)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[ParamHeaderPrefix+p.Name] = HeaderValue(s)
	}
	return out
}

// CheckParamHeaders holds a tools/call's Mcp-Param-* headers to its
// arguments for the tool's annotations ps ("Server Behavior for Custom
// Headers"): a value in the body needs its header, equal after decoding
// (integers compared as numbers); an absent or null value needs none. get
// returns a header's values (http.Header.Values). It returns why not, ""
// when they agree.
func CheckParamHeaders(ps []ParamHeader, args []byte, get func(name string) []string) string {
	for _, p := range ps {
		name := ParamHeaderPrefix + p.Name
		hs := get(name)
		v := argument(args, p.Path)
		if v == nil {
			if len(hs) > 0 {
				return fmt.Sprintf("Header mismatch: %s header sent for argument %q, which is absent or null", name, strings.Join(p.Path, "."))
			}
			continue
		}
		if len(hs) == 0 {
			return fmt.Sprintf("Header mismatch: the %s header is missing (argument %q is %s)", name, strings.Join(p.Path, "."), v)
		}
		got, err := DecodeHeaderValue(hs[0])
		if len(hs) != 1 || err != nil {
			return fmt.Sprintf("the %s header value %q is malformed", name, strings.Join(hs, ","))
		}
		want, ok := primitive(v)
		if !ok {
			return fmt.Sprintf("Header mismatch: %s header sent for argument %q, which is %s, not a string, integer or boolean", name, strings.Join(p.Path, "."), v)
		}
		if got != want && !sameInteger(got, want) {
			return fmt.Sprintf("Header mismatch: %s header value %q does not match body value %s", name, got, v)
		}
	}
	return ""
}

// sameInteger reports whether header text h names the integer want
// ("Server Validation": 42.0 and 42 are equal).
func sameInteger(h, want string) bool {
	w, err := strconv.ParseInt(want, 10, 64)
	if err != nil {
		return false
	}
	f, err := strconv.ParseFloat(h, 64)
	return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger && int64(f) == w
}

// Base64 sentinel of header values ("Value Encoding").
const sentinelPrefix, sentinelSuffix = "=?base64?", "?="

// HeaderValue is v as a 2026-07-28 header value (Mcp-Name, Mcp-Param-*):
// as it is when it is visible ASCII with inner spaces only, else (and when
// it looks like the sentinel itself) =?base64?…?= ("Value Encoding").
func HeaderValue(v string) string {
	plain := v == "" || (v[0] != ' ' && v[len(v)-1] != ' ')
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] == ' ' || (v[i] >= 0x21 && v[i] <= 0x7e)
	}
	if plain && !(strings.HasPrefix(v, sentinelPrefix) && strings.HasSuffix(v, sentinelSuffix)) {
		return v
	}
	return sentinelPrefix + base64.StdEncoding.EncodeToString([]byte(v)) + sentinelSuffix
}

// DecodeHeaderValue undoes HeaderValue's sentinel; other values are taken
// as they are.
func DecodeHeaderValue(v string) (string, error) {
	if !strings.HasPrefix(v, sentinelPrefix) || !strings.HasSuffix(v, sentinelSuffix) || len(v) < len(sentinelPrefix)+len(sentinelSuffix) {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
	return string(b), err
}
