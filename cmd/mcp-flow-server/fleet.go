package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/mcp-flow/mcp-flow/flow"
	"github.com/mcp-flow/mcp-flow/internal/quiclb"
)

// fleetKeyEnv holds a fleet key's text when -fleet-key-file is not given.
const fleetKeyEnv = "MCP_FLOW_FLEET_KEY"

// loadFleetKey is the fleet key of -fleet-key-file, else of
// $MCP_FLOW_FLEET_KEY, else nil (docs/deploy.md, "Fleet"). The key never
// reaches the log: only where it came from and its ID (flow.FleetKey.ID).
// A key file others may read is used, with a warning.
func loadFleetKey(file string, log *slog.Logger) (*flow.FleetKey, error) {
	var text []byte
	from := "$" + fleetKeyEnv
	switch {
	case file != "":
		st, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("-fleet-key-file: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			log.Warn("the fleet key file may be read by others than its owner; chmod 600 it", "file", file, "mode", st.Mode().Perm().String())
		}
		if text, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("-fleet-key-file: %w", err)
		}
		from = file
	case os.Getenv(fleetKeyEnv) != "":
		text = []byte(os.Getenv(fleetKeyEnv))
	default:
		return nil, nil
	}
	k, err := flow.ParseFleetKey(text)
	clear(text)
	if err != nil {
		return nil, fmt.Errorf("fleet key from %s: %w", from, err)
	}
	log.Info("fleet key loaded: stateless resets and address tokens shared with the servers of the same key", "from", from, "id", k.ID())
	return k, nil
}

// genFleetKey writes a new fleet key to file (mode 0600; an existing file
// is not overwritten) and says its ID on stderr; nothing of the key is
// printed.
func genFleetKey(file string) error {
	k, err := flow.NewFleetKey()
	if err != nil {
		return err
	}
	text, _ := k.MarshalText()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(text, '\n'))
	clear(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, os.Remove(file))
	}
	fmt.Fprintf(os.Stderr, "mcp-flow-server: wrote a new fleet key to %s (id %s); give every server of the fleet this file (-fleet-key-file) or its contents ($%s)\n", file, k.ID(), fleetKeyEnv)
	return nil
}

// connectionIDs is -server-id's generator: QUIC-LB plaintext connection
// IDs (package quiclb) that carry the server ID hexID (1 to 11 octets in
// hex), under config rotation rotation; nil for an empty hexID (quic-go's
// random IDs).
func connectionIDs(hexID string, rotation uint) (*quiclb.Generator, error) {
	if hexID == "" {
		return nil, nil
	}
	sid, err := hex.DecodeString(hexID)
	if err != nil {
		return nil, fmt.Errorf("-server-id %q: want hexadecimal octets", hexID)
	}
	if rotation > quiclb.MaxConfigRotation {
		return nil, fmt.Errorf("-server-id-rotation %d: want 0 to %d", rotation, quiclb.MaxConfigRotation)
	}
	g, err := quiclb.NewGenerator(quiclb.Config{ConfigRotation: uint8(rotation), ServerID: sid})
	if err != nil {
		return nil, fmt.Errorf("-server-id %q: %w", hexID, err)
	}
	return g, nil
}
