package flow

// ProgressSenderEnded returns a channel closed once the session's progress
// sender has returned (closed at once if it never started), so that tests
// can show it ends with its session.
func ProgressSenderEnded(s *Session) <-chan struct{} {
	var ended <-chan struct{}
	s.pg.start.Do(func() {
		c := make(chan struct{})
		close(c)
		ended = c
	})
	if ended != nil {
		return ended
	}
	return s.pg.ended
}
