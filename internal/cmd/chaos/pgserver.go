package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A run may bring its own PostgreSQL server (-own-postgres): a cluster of its
// own in a temporary folder, on a free port, which it can restart as a
// disturbance without touching a server other work shares. initdb and postgres
// refuse to run as root, so as root the cluster runs as the postgres user.

// ErrNoPostgresBinaries means no initdb and pg_ctl were found: not on PATH, nor
// in /usr/lib/postgresql/*/bin (Debian's place, off PATH).
var ErrNoPostgresBinaries = errors.New("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin")

// pgServer is the run's own PostgreSQL cluster.
type pgServer struct {
	bin  string // the folder of initdb, pg_ctl and postgres
	dir  string // the cluster's folder, its data in dir/data
	port int
	as   string // the user it runs as ("" for this process's own)
}

// postgresBinaries finds the folder of initdb and pg_ctl: PATH first, then the
// newest /usr/lib/postgresql/N/bin.
func postgresBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", ErrNoPostgresBinaries
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// startPostgres makes a new cluster in a temporary folder and starts it on a
// free port of 127.0.0.1, with trust authentication for the postgres role. As
// root, the folder is given to the postgres user, who runs the server.
func startPostgres(ctx context.Context) (*pgServer, error) {
	bin, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	s := &pgServer{bin: bin}
	if os.Geteuid() == 0 {
		s.as = "postgres"
	}
	if s.dir, err = os.MkdirTemp("", "countersign-chaos-pg-"); err != nil {
		return nil, err
	}
	if s.as != "" {
		u, err := user.Lookup(s.as)
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("run PostgreSQL as %s (initdb refuses root): %w", s.as, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	if out, err := s.run(ctx, "initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A crash here is the server process's, never the machine's: the WAL in the
	// page cache survives it, so fsync is left off, for a loaded machine's sake.
	conf := fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 200\nfsync = off\nshared_buffers = 32MB\n",
		s.port, s.dir)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		f.Close()
	}
	if err != nil {
		s.remove()
		return nil, err
	}
	if err := s.ctl(ctx, "start"); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// URL is the server's postgres database.
func (s *pgServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

func (s *pgServer) data() string { return filepath.Join(s.dir, "data") }

// restart stops the server and starts it again: fast is a clean shutdown
// (sessions ended, a checkpoint), immediate is a crash (the server stops at
// once and recovers from its WAL at the start).
func (s *pgServer) restart(ctx context.Context, immediate bool) error {
	if err := s.stop(ctx, immediate); err != nil {
		return err
	}
	return s.start(ctx)
}

// stop stops the server, fast or immediate (see restart), and returns once it
// is down.
func (s *pgServer) stop(ctx context.Context, immediate bool) error {
	return s.ctl(ctx, "stop", "-m", map[bool]string{false: "fast", true: "immediate"}[immediate])
}

// start starts the server and returns once it accepts connections.
func (s *pgServer) start(ctx context.Context) error { return s.ctl(ctx, "start") }

// ctl runs pg_ctl's action on the cluster, waiting until it is done.
func (s *pgServer) ctl(ctx context.Context, action string, args ...string) error {
	args = append([]string{action, "-D", s.data(), "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log")}, args...)
	if out, err := s.run(ctx, "pg_ctl", args...); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl %s: %w\n%s%s", action, err, out, tail(log, 2000))
	}
	return nil
}

// run runs one of the server's programs, as the server's user.
func (s *pgServer) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, prog)
	cmd := exec.CommandContext(ctx, path, args...)
	if s.as != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.as, "--", path}, args...)...)
	}
	cmd.Dir = s.dir
	// pg_ctl leaves the server running with these open otherwise, and
	// CombinedOutput would wait for it to end.
	out, err := os.CreateTemp("", "countersign-chaos-pgctl-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	b, _ := os.ReadFile(out.Name())
	return b, err
}

// remove stops the server, at once, and removes its folder.
func (s *pgServer) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.run(ctx, "pg_ctl", "stop", "-D", s.data(), "-m", "immediate", "-w")
	os.RemoveAll(s.dir)
}

// freePort is a TCP port of 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// hostOf is the host:port of a postgres:// URL.
func hostOf(u string) string {
	rest, _ := strings.CutPrefix(strings.TrimPrefix(u, "postgresql://"), "postgres://")
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}
