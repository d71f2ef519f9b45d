package mcp

// WatchedResources returns how many resource files s is watching for
// subscribers, so that tests can see a watch start and stop.
func WatchedResources(s *Server) int { return s.watch.watching() }

// Subscribers returns how many sessions s waits on the end of, having
// subscribed to a watched resource.
func Subscribers(s *Server) int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return len(s.watch.sessions)
}
