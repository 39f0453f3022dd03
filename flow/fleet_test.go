package flow_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-flow/mcp-flow/flow"
)

// TestFleetKeyNeverPrints: a FleetKey's text round-trips through
// ParseFleetKey; fmt's verbs, %#v and slog show its ID only, never its
// bytes; a bad key's error does not quote it.
func TestFleetKeyNeverPrints(t *testing.T) {
	k, err := flow.NewFleetKey()
	if err != nil {
		t.Fatal(err)
	}
	text, _ := k.MarshalText()
	back, err := flow.ParseFleetKey(append([]byte(" "), append(text, '\n')...))
	if err != nil || back.ID() != k.ID() || len(k.ID()) != 8 {
		t.Fatalf("ParseFleetKey of MarshalText: %v, ID %q; want the key back (ID %q)", err, back.ID(), k.ID())
	}
	raw, _ := hex.DecodeString(string(text))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "key", k, "value", *k)
	for _, out := range []string{fmt.Sprint(k), fmt.Sprint(*k), fmt.Sprintf("%d %x %X %#v %+v %q %s", *k, *k, k, *k, k, k, k), logged.String()} {
		if !strings.Contains(out, k.ID()) || strings.Contains(strings.ToLower(out), string(text)) || strings.Contains(out, string(raw)) || strings.Contains(out, fmt.Sprint(raw[:4])[1:8]) {
			t.Errorf("a printed FleetKey: %q; want its ID %s and none of its bytes", out, k.ID())
		}
	}
	for _, bad := range []string{"", string(text[:62]), strings.Replace(string(text), string(text[0]), "g", 1), string(text) + "00"} {
		if _, err := flow.ParseFleetKey([]byte(bad)); err == nil || (len(bad) > 8 && strings.Contains(err.Error(), bad[8:16])) {
			t.Errorf("ParseFleetKey(%d characters): %v; want an error that does not quote the text", len(bad), err)
		}
	}
	other, _ := flow.NewFleetKey()
	if other.ID() == k.ID() {
		t.Errorf("two random keys share the ID %s", k.ID())
	}
}
