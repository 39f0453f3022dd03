package flowtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Qlog is one qlog file that a QUIC connection left under $QLOGDIR
// (internal/qlogdir), read and checked by ReadQlogs.
type Qlog struct {
	Name  string // <odcid>_<side>.sqlog
	ODCID string // the original destination connection ID, in hex
	Side  string // "client" or "server"
	// Events are the names of the file's events, in order
	// ("transport:packet_sent", "http3:frame_created", …).
	Events []string
}

// qlogName is how quic-go names a connection's qlog file.
var qlogName = regexp.MustCompile(`^([0-9a-f]+)_(client|server)\.sqlog$`)

// ReadQlogs reads every file that glob matches as a qlog that quic-go
// wrote (whole: once its connection has ended): named
// <odcid>_<client|server>.sqlog, in JSON-SEQ (RFC 7464: each record starts
// with 0x1E and is one JSON text), its first record the header (file schema
// urn:ietf:params:qlog:file:sequential, serialization
// application/qlog+json-seq, qlog_format JSON-SEQ and a qlog_version, event
// schemas, vantage point its side, group_id its ODCID),
// every other record an event with a time, a name and data. Any file that
// is not so fails t.
func ReadQlogs(t testing.TB, glob string) []Qlog {
	t.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	var qs []Qlog
	for _, p := range paths {
		name := filepath.Base(p)
		m := qlogName.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("%s in the qlog directory is not named <odcid>_<client|server>.sqlog", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		q := Qlog{Name: name, ODCID: m[1], Side: m[2]}
		if len(b) == 0 || b[0] != 0x1e {
			t.Fatalf("%s: does not start with a JSON-SEQ record separator (0x1E): %.40q", q.Name, b)
		}
		for i, rec := range bytes.Split(b[1:], []byte{0x1e}) {
			if !json.Valid(rec) {
				t.Fatalf("%s: record %d is not one JSON text: %.200q", q.Name, i, rec)
			}
			if i == 0 {
				checkQlogHeader(t, q, rec)
				continue
			}
			var ev struct {
				Time *float64
				Name string
				Data json.RawMessage
			}
			if err := json.Unmarshal(rec, &ev); err != nil || ev.Time == nil || ev.Name == "" || len(ev.Data) == 0 || ev.Data[0] != '{' {
				t.Fatalf("%s: record %d is not an event (time, name, data): %.200q (%v)", q.Name, i, rec, err)
			}
			q.Events = append(q.Events, ev.Name)
		}
		qs = append(qs, q)
	}
	return qs
}

func checkQlogHeader(t testing.TB, q Qlog, rec []byte) {
	t.Helper()
	var h struct {
		FileSchema          string `json:"file_schema"`
		SerializationFormat string `json:"serialization_format"`
		QlogFormat          string `json:"qlog_format"`
		QlogVersion         string `json:"qlog_version"`
		Trace               struct {
			EventSchemas []string `json:"event_schemas"`
			VantagePoint struct {
				Type string
			} `json:"vantage_point"`
			CommonFields struct {
				GroupID string `json:"group_id"`
			} `json:"common_fields"`
		}
	}
	if err := json.Unmarshal(rec, &h); err != nil {
		t.Fatalf("%s: header: %v", q.Name, err)
	}
	if h.FileSchema != "urn:ietf:params:qlog:file:sequential" || h.SerializationFormat != "application/qlog+json-seq" ||
		h.QlogFormat != "JSON-SEQ" || h.QlogVersion == "" ||
		h.Trace.VantagePoint.Type != q.Side || h.Trace.CommonFields.GroupID != q.ODCID || len(h.Trace.EventSchemas) == 0 {
		t.Fatalf("%s: not the header of a %s's qlog of connection %s: %s", q.Name, q.Side, q.ODCID, rec)
	}
}
