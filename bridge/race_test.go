//go:build race

package bridge_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
