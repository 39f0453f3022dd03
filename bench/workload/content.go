package workload

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// toolResult is the part of a tools/call result that Fetch counts.
type toolResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		Resource *struct {
			Text string `json:"text"`
			Blob string `json:"blob"`
		} `json:"resource"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// inlineBytes counts the payload bytes of a tools/call result's inline
// content: text as is, image and audio data and resource blobs decoded
// from base64. An isError result is an error.
func inlineBytes(raw json.RawMessage) (int64, error) {
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, fmt.Errorf("tools/call result: %w", err)
	}
	if r.IsError {
		return 0, fmt.Errorf("the tool failed: %.200s", raw)
	}
	var n int64
	for _, c := range r.Content {
		n += int64(len(c.Text)) + b64Len(c.Data)
		if c.Resource != nil {
			n += int64(len(c.Resource.Text)) + b64Len(c.Resource.Blob)
		}
	}
	return n, nil
}

func b64Len(s string) int64 {
	if s == "" {
		return 0
	}
	return int64(base64.StdEncoding.DecodedLen(len(s))) - int64(len(s)-len(trimPad(s)))
}

func trimPad(s string) string {
	for len(s) > 0 && s[len(s)-1] == '=' {
		s = s[:len(s)-1]
	}
	return s
}
