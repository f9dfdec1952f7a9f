package main

import (
	"fmt"
	"os"
	"strings"
)

// hostPID is HOST-PID, with the host's name cut to what a replica name allows: the
// default name of a replica, unique on its machine for the process's life.
func hostPID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, host)
	return fmt.Sprintf("%.50s-%d", host, os.Getpid())
}
