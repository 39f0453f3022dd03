package conformance

import (
	"regexp"
	"strconv"
	"strings"
)

// What a client reports about a failed call (client.stream-error,
// client.invalid-ref): the checks read the client's output, stdout and
// stderr, for the error the rule gives it. Exiting non-zero is not enough:
// a client that fails every call for any reason would pass.

// injectedFailure is the error of the $/streamError that client.stream-error
// sends after it resets the stream (guide §4.3).
const injectedFailure = "conformance: injected stream failure"

// invalidRefTag is the stream tag of client.invalid-ref's ref/stream block,
// which no stream carries: chosen so that it is not a number a client prints
// by chance.
const invalidRefTag = 7341

// reportsStreamError reports whether out names the failed stream's error:
// the reset code (32603, as a stream error code or a JSON-RPC -32603) or
// the message of the $/streamError.
func reportsStreamError(out string) bool {
	code := strconv.Itoa(int(resetWriterFailed))
	return regexp.MustCompile(`\b`+code+`\b`).MatchString(out) || strings.Contains(out, injectedFailure)
}

// reportsInvalidRef reports whether out has -32001, the guide's Invalid
// Stream Reference (§4.2), or an error line naming the tag that names no
// stream (a line with the tag and a word of failure: a client that only
// prints the result it got does not report anything).
func reportsInvalidRef(out string) bool {
	if regexp.MustCompile(`-32001\b`).MatchString(out) {
		return true
	}
	tag := regexp.MustCompile(`\b` + strconv.Itoa(invalidRefTag) + `\b`)
	failure := regexp.MustCompile(`(?i)\b(no|not|never|invalid|unknown|missing|error|fail(ed|s)?|timed? ?out)\b`)
	for _, line := range strings.Split(out, "\n") {
		if tag.MatchString(line) && failure.MatchString(line) {
			return true
		}
	}
	return false
}
