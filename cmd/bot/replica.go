package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/countersign/countersign/operator"
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

// followLeadership keeps countersign_leader at whether this process leads its
// transport (for the one owner of a SQLite journal, always), until ctx ends.
func (m *botMetrics) followLeadership(ctx context.Context, o *operator.Operator) {
	for {
		leading, changed := o.Leading()
		if leading {
			m.leader.Set(1)
		} else {
			m.leader.Set(0)
		}
		if changed == nil {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
