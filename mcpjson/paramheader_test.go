package mcpjson_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/mcpjson"
)

// TestParamHeadersConstraints: each constraint the 2026-07-28 transports
// put on x-mcp-header ("Schema Extension") refuses the schema that breaks
// it, and a valid nested annotation is found with its path.
func TestParamHeadersConstraints(t *testing.T) {
	bad := invalidSchemas(t)
	for name, schema := range bad {
		if ps, err := mcpjson.ParamHeaders(schema); err == nil {
			t.Errorf("%s: %s accepted as %v", name, schema, ps)
		}
	}
	ps, err := mcpjson.ParamHeaders([]byte(`{"type":"object","properties":{"q":{"type":"string"},"loc":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"!#$%&'*+-.^_` + "`" + `|~aZ0"}}}}}`))
	if err != nil || len(ps) != 1 || strings.Join(ps[0].Path, ".") != "loc.region" || ps[0].Name != "!#$%&'*+-.^_`|~aZ0" {
		t.Fatalf("nested annotation: %v %v", ps, err)
	}
	tools := mcpjson.ToolsParamHeaders([]byte(`{"tools":[{"name":"ok","inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}},{"name":"bad","inputSchema":{"properties":{"r":{"type":"number","x-mcp-header":"R"}}}},{"name":"plain","inputSchema":{"type":"object"}}]}`))
	if len(tools) != 1 || tools["ok"] == nil {
		t.Fatalf("tools/list result: %v, want ok only", tools)
	}
}

// invalidSchemas are inputSchemas, by name, each breaking one constraint
// of x-mcp-header (testdata/invalid_x_mcp_header.json; the upstream's
// TestHTTPUpstreamDropsInvalidTools serves them too).
func invalidSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("testdata/invalid_x_mcp_header.json")
	var m map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || len(m) == 0 {
		t.Fatalf("testdata: %v", err)
	}
	return m
}

// TestDropInvalidTools: a tools/list result loses exactly the tools whose
// x-mcp-header annotations break a constraint (one tool per way of
// breaking one), each named with its reason; the valid tools and the
// other members keep their bytes (transports 2026-07-28, "Client
// Behavior").
func TestDropInvalidTools(t *testing.T) {
	bad := invalidSchemas(t)
	valid := []string{
		`{"name":"plain","inputSchema":{"type":"object"}}`,
		`{"name": "ok" , "inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}}`,
	}
	tools := []string{valid[0]}
	for name, schema := range bad {
		tools = append(tools, `{"name":`+strconv.Quote(name)+`,"inputSchema":`+string(schema)+`}`)
	}
	tools = append(tools, valid[1])
	result := `{"tools":[` + strings.Join(tools, ",") + `],"nextCursor":"c2"}`
	out, dropped := mcpjson.DropInvalidTools([]byte(result))
	if want := `{"tools":[` + strings.Join(valid, ",") + `],"nextCursor":"c2"}`; string(out) != want {
		t.Fatalf("result:\n%s\nwant\n%s", out, want)
	}
	if len(dropped) != len(bad) {
		t.Fatalf("dropped %d tools, want %d: %v", len(dropped), len(bad), dropped)
	}
	for _, d := range dropped {
		if _, ok := bad[d.Name]; !ok || d.Err == nil || d.Err.Error() == "" {
			t.Errorf("dropped %q (%v): not one of the invalid tools, or no reason", d.Name, d.Err)
		}
	}
	if out, dropped := mcpjson.DropInvalidTools([]byte(`{"tools":[` + valid[1] + `]}`)); len(dropped) != 0 || string(out) != `{"tools":[`+valid[1]+`]}` {
		t.Fatalf("a valid list changed: %s %v", out, dropped)
	}
}

// TestParamHeaderValues: the headers a client sends ("Value Encoding"),
// byte for byte, the spec's own examples included.
func TestParamHeaderValues(t *testing.T) {
	ps := []mcpjson.ParamHeader{{Path: []string{"s"}, Name: "S"}, {Path: []string{"n"}, Name: "N"}, {Path: []string{"b"}, Name: "B"}, {Path: []string{"o", "i"}, Name: "I"}}
	cases := []struct{ args, want string }{
		{`{"s":"us-west1","n":42,"b":true,"o":{"i":"x y"}}`, "B=true I=x y N=42 S=us-west1"},
		{`{"s":"Hello, 世界"}`, "S==?base64?SGVsbG8sIOS4lueVjA==?="},
		{`{"s":" padded "}`, "S==?base64?IHBhZGRlZCA=?="},
		{`{"s":"line1\nline2"}`, "S==?base64?bGluZTEKbGluZTI=?="},
		{`{"s":"=?base64?literal?="}`, "S==?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{`{"s":null,"n":-7,"b":false}`, "B=false N=-7"},
		{`{"n":9007199254740991}`, "N=9007199254740991"},
		{`{"n":9007199254740992,"b":"true"}`, "B=true"}, // past the safe range: no header
		{`{"n":1.5,"o":{"i":null}}`, ""},
		{`{"o":"not an object"}`, ""},
		{`{}`, ""},
	}
	for _, c := range cases {
		h := mcpjson.ParamHeaderValues(ps, []byte(c.args))
		var got []string
		for _, k := range []string{"B", "I", "N", "S"} {
			if v, ok := h[mcpjson.ParamHeaderPrefix+k]; ok {
				got = append(got, k+"="+v)
			}
		}
		if strings.Join(got, " ") != c.want || len(h) != len(got) {
			t.Errorf("%s: %v, want %q", c.args, h, c.want)
		}
	}
}

// TestCheckParamHeaders: a server holds each Mcp-Param-* header to the body
// ("Server Behavior for Custom Headers", "Server Validation"); each way a
// header can disagree is refused, each way it agrees is accepted.
func TestCheckParamHeaders(t *testing.T) {
	ps := []mcpjson.ParamHeader{{Path: []string{"region"}, Name: "Region"}, {Path: []string{"n"}, Name: "N"}}
	cases := []struct {
		args    string
		headers map[string][]string
		want    string // "" accepted, else a piece of the refusal
	}{
		{`{"region":"us-west1","n":42}`, map[string][]string{"Mcp-Param-Region": {"us-west1"}, "Mcp-Param-N": {"42"}}, ""},
		{`{"region":"Zürich"}`, map[string][]string{"Mcp-Param-Region": {"=?base64?WsO8cmljaA==?="}}, ""},
		{`{"n":42}`, map[string][]string{"Mcp-Param-N": {"42.0"}}, ""},
		{`{"n":42.0}`, map[string][]string{"Mcp-Param-N": {"42"}}, ""},
		{`{"region":null}`, nil, ""},
		{`{}`, nil, ""},
		{`{"region":"us-west1"}`, nil, "the Mcp-Param-Region header is missing"},
		{`{"region":"us-west1"}`, map[string][]string{"Mcp-Param-Region": {"eu-west1"}}, `Mcp-Param-Region header value "eu-west1" does not match body value "us-west1"`},
		{`{"region":"Zürich"}`, map[string][]string{"Mcp-Param-Region": {"=?base64?WnVyaWNo?="}}, `header value "Zurich" does not match`},
		{`{"region":"us-west1"}`, map[string][]string{"Mcp-Param-Region": {"=?base64?!!!?="}}, "malformed"},
		{`{"region":"us-west1"}`, map[string][]string{"Mcp-Param-Region": {"us-west1", "us-west1"}}, "malformed"},
		{`{"n":42}`, map[string][]string{"Mcp-Param-N": {"43"}}, `Mcp-Param-N header value "43" does not match body value 42`},
		{`{"n":42}`, map[string][]string{"Mcp-Param-N": {"42.5"}}, "does not match"},
		{`{"region":null}`, map[string][]string{"Mcp-Param-Region": {"null"}}, "absent or null"},
		{`{}`, map[string][]string{"Mcp-Param-N": {"1"}}, "absent or null"},
		{`{"region":["a"]}`, map[string][]string{"Mcp-Param-Region": {"a"}}, "not a string, integer or boolean"},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, vs := range c.headers {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		got := mcpjson.CheckParamHeaders(ps, []byte(c.args), h.Values)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s with %v: %q, want %q", c.args, c.headers, got, c.want)
		}
	}
}
