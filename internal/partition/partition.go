// Package partition is a TCP proxy that can cut the network between its clients
// and one server, and heal it, so that tests and the chaos run can put a
// process out of reach of its database the way a network fault does, over real
// TCP, and see what it does then and after.
//
// A cut is one of two kinds. Reset ends every connection at once, at both ends,
// and resets the new ones: the database's host gone, or a firewall that rejects.
// Hang lets nothing through in either direction and holds new connections
// without an answer: a link gone silent. Data sent during a hang is delivered
// when it heals, so a connection both ends kept goes on. A client that gives up
// during a hang (its connection closed) is never heard of by the server: its
// session there stays open after the heal, as a real server's does until its
// TCP keepalive or a timeout of its own ends it (Linger bounds how long).
package partition

import (
	"net"
	"sync"
	"time"
)

// Mode is the kind of a cut.
type Mode string

// The kinds of cut.
const (
	Reset Mode = "reset"
	Hang  Mode = "hang"
)

// Cut is one cut as it happened: its kind, when it began and healed (zero while
// it lasts), and how many connections it caught.
type Cut struct {
	Mode   Mode
	At     time.Time
	Healed time.Time
	Conns  int
}

// Proxy forwards the connections made to Addr to its server, until cut.
type Proxy struct {
	// Linger is how long the server keeps the session of a client that left
	// during a hang before it notices (its keepalive); 0 keeps it until the
	// server ends it or the proxy closes.
	Linger time.Duration
	// Delay is how long what either end sends takes to reach the other: a
	// server across a network rather than on the same host (a round trip
	// takes twice Delay). Set it before the first connection.
	Delay time.Duration

	ln     net.Listener
	target string

	mu     sync.Mutex
	mode   Mode          // "" while the network is whole
	healed chan struct{} // closed when the current cut heals
	links  map[*link]struct{}
	cuts   []Cut
	closed bool
}

// link is one client's connection and the proxy's to the server for it.
type link struct {
	client, server net.Conn
	up, down       flow // client to server, server to client
	// gone is set when the client closed its end during a hang: the server is
	// never told.
	gone bool
}

// flow is one direction of a link: what a hang kept back, and whether its
// sender closed during the hang.
type flow struct {
	mu      sync.Mutex
	pending [][]byte
	ended   bool
}

// New listens on a free port of 127.0.0.1 and forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, links: map[*link]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is the host:port clients connect to instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts the network in the way m says, until Heal. A cut while one lasts
// does nothing.
func (p *Proxy) Cut(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != "" || p.closed {
		return
	}
	p.mode, p.healed = m, make(chan struct{})
	p.cuts = append(p.cuts, Cut{Mode: m, At: time.Now(), Conns: len(p.links)})
	if m == Reset {
		for l := range p.links {
			reset(l.client)
			reset(l.server)
			delete(p.links, l)
		}
	}
}

// Heal ends the current cut: what a hang kept back is delivered, and a server's
// close made during it reaches its client.
func (p *Proxy) Heal() {
	p.mu.Lock()
	if p.mode == "" {
		p.mu.Unlock()
		return
	}
	p.mode = ""
	close(p.healed)
	p.cuts[len(p.cuts)-1].Healed = time.Now()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		go p.flush(l, &l.up, l.server, true)
		go p.flush(l, &l.down, l.client, false)
	}
}

// Cuts are the cuts made so far, oldest first.
func (p *Proxy) Cuts() []Cut {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Cut(nil), p.cuts...)
}

// Stranded is how many connections have a client that left during a hang and
// a server end still open: sessions the server keeps for nobody.
func (p *Proxy) Stranded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		if l.gone {
			n++
		}
	}
	return n
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.healed != nil && p.mode != "" {
		close(p.healed)
		p.mode = ""
	}
	for l := range p.links {
		l.client.Close()
		l.server.Close()
		delete(p.links, l)
	}
	p.mu.Unlock()
	return p.ln.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// serve connects client c to the server, once the network lets it.
func (p *Proxy) serve(c net.Conn) {
	for {
		p.mu.Lock()
		mode, healed, closed := p.mode, p.healed, p.closed
		p.mu.Unlock()
		switch {
		case closed || mode == Reset:
			reset(c)
			return
		case mode == Hang:
			<-healed // no answer while it lasts
			continue
		}
		break
	}
	s, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		reset(c)
		return
	}
	l := &link{client: c, server: s}
	p.mu.Lock()
	if p.closed || p.mode != "" { // cut while dialling: try again under the cut's rule
		p.mu.Unlock()
		s.Close()
		p.serve(c)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	go p.pipe(l, &l.up, c, p.delayed(s), true)
	go p.pipe(l, &l.down, s, p.delayed(c), false)
}

// delayed is dst, through which writes arrive Delay after they were made.
func (p *Proxy) delayed(dst net.Conn) net.Conn {
	if p.Delay <= 0 {
		return dst
	}
	d := &delayConn{Conn: dst, delay: p.Delay, chunks: make(chan chunk, 1024), done: make(chan struct{})}
	go d.deliver()
	return d
}

// delayConn delivers each write Delay after it, in order, keeping the link's
// throughput (writes do not wait for each other's delay).
type delayConn struct {
	net.Conn
	delay  time.Duration
	chunks chan chunk
	done   chan struct{} // closed when the link ends
	once   sync.Once
}

type chunk struct {
	b   []byte
	due time.Time
}

func (d *delayConn) Write(b []byte) (int, error) {
	select {
	case d.chunks <- chunk{b: append([]byte(nil), b...), due: time.Now().Add(d.delay)}:
		return len(b), nil
	case <-d.done:
		return 0, net.ErrClosed
	}
}

func (d *delayConn) deliver() {
	for {
		select {
		case c := <-d.chunks:
			time.Sleep(time.Until(c.due))
			if _, err := d.Conn.Write(c.b); err != nil {
				d.end()
				return
			}
		case <-d.done:
			return
		}
	}
}

func (d *delayConn) end() { d.once.Do(func() { close(d.done) }) }

// ended stops the delivery of dst's writes when dst is delayed.
func ended(dst net.Conn) {
	if d, ok := dst.(*delayConn); ok {
		d.end()
	}
}

// pipe copies src to dst for one direction of l: during a hang it keeps what it
// reads back, and a close it reads then is passed on only at the heal (the
// client's, never).
func (p *Proxy) pipe(l *link, f *flow, src, dst net.Conn, up bool) {
	defer ended(dst)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		hang := p.hanging()
		if n > 0 {
			if hang {
				f.pending = append(f.pending, append([]byte(nil), buf[:n]...))
			} else if werr := f.write(dst); werr != nil || writeAll(dst, buf[:n]) != nil {
				f.mu.Unlock()
				p.drop(l)
				return
			}
		}
		if err != nil && hang && p.known(l) {
			f.ended = true
			if up {
				p.mu.Lock()
				l.gone = true
				p.mu.Unlock()
			}
			f.mu.Unlock()
			if up {
				p.linger(l)
			}
			return // the heal passes it on (flush)
		}
		f.mu.Unlock()
		if err != nil {
			p.drop(l)
			return
		}
	}
}

// flush delivers, at a heal, what one direction of l kept back, and passes on a
// close its sender made during the hang, but for a client's.
func (p *Proxy) flush(l *link, f *flow, dst net.Conn, up bool) {
	f.mu.Lock()
	err := f.write(dst)
	ended := f.ended
	f.mu.Unlock()
	if err != nil || (ended && !up) {
		p.drop(l)
	}
}

// linger keeps the server's end of a link whose client left during a hang
// until the server closes it, or Linger passes.
func (p *Proxy) linger(l *link) {
	if p.Linger > 0 {
		time.AfterFunc(p.Linger, func() { p.drop(l) })
	}
}

// write sends what f kept back, in order; f.mu is held.
func (f *flow) write(dst net.Conn) error {
	for len(f.pending) > 0 {
		if err := writeAll(dst, f.pending[0]); err != nil {
			return err
		}
		f.pending = f.pending[1:]
	}
	return nil
}

func writeAll(c net.Conn, b []byte) error {
	_, err := c.Write(b)
	return err
}

func (p *Proxy) hanging() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == Hang
}

func (p *Proxy) known(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.links[l]
	return ok
}

// drop closes both ends of l.
func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.client.Close()
	l.server.Close()
}

// reset closes c with a RST instead of a FIN, as a host that forgot the
// connection answers.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
