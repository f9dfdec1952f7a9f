package main

import (
	"os"
	"strconv"
)

// replicaName is the name of this process among the replicas on one journal:
// -replica, else COUNTERSIGN_REPLICA, else hostname-pid. It labels every log line
// of the process and its countersign_replica_info metric.
func replicaName(flag string, env Env) string {
	if flag != "" {
		return flag
	}
	if name := env.Getenv("COUNTERSIGN_REPLICA"); name != "" {
		return name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
