package mcp

// WatchedResources returns how many resource files s is watching for
// subscribers, so that tests can see a watch start and stop.
func WatchedResources(s *Server) int { return s.watch.watching() }
