package mcp

// OpenSessions counts the sessions the server holds, of every transport.
func OpenSessions(s *Server) int {
	n := 0
	for range s.srv.Sessions() {
		n++
	}
	return n
}
