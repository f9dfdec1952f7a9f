package partition_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/partition"
)

// server echoes each line it reads, and reports on closed when a connection's
// client end is closed (it read EOF or an error).
func server(t *testing.T) (addr string, closed <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ended := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						ended <- struct{}{}
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String(), ended
}

func proxy(t *testing.T, target string) *partition.Proxy {
	t.Helper()
	p, err := partition.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func echo(t *testing.T, c net.Conn, r *bufio.Reader, line string, within time.Duration) error {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(within))
	got, err := r.ReadString('\n')
	if err == nil && got != line+"\n" {
		t.Errorf("echo %q, want %q", got, line)
	}
	return err
}

// A hang holds what is sent, both ways, and delivers it when it heals: a
// connection both ends kept goes on. New connections get no answer meanwhile.
func TestAHangHoldsAndHealDelivers(t *testing.T) {
	addr, _ := server(t)
	p := proxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := echo(t, c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut(partition.Hang)
	var ne net.Error
	if err := echo(t, c, r, "during", 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("an echo through a hang: %v, want a timeout", err)
	}
	late, err := net.Dial("tcp", p.Addr()) // accepted by the kernel, answered by nobody
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	p.Heal()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("after the heal: %q, %v; want the echo held back", got, err)
	}
	if err := echo(t, late, bufio.NewReader(late), "late", 5*time.Second); err != nil {
		t.Errorf("a connection made during the hang, after it: %v", err)
	}
	cuts := p.Cuts()
	if len(cuts) != 1 || cuts[0].Mode != partition.Hang || cuts[0].Conns != 1 || cuts[0].Healed.Before(cuts[0].At) {
		t.Errorf("cuts %+v, want one hang that caught one connection", cuts)
	}
}

// A client that leaves during a hang is never heard of by the server: its end
// stays open there after the heal, until Linger passes.
func TestAClientGoneDuringAHangLingersAtTheServer(t *testing.T) {
	addr, ended := server(t)
	p := proxy(t, addr)
	p.Linger = 500 * time.Millisecond
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(t, c, bufio.NewReader(c), "hello", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut(partition.Hang)
	start := time.Now()
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); p.Stranded() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the proxy never read the client's close")
		}
	}
	p.Heal()
	select {
	case <-ended:
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Errorf("the server heard of the client's close after %s, want the linger", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("the server's end outlived the linger")
	}
}

// A reset ends the connections at both ends, and resets new ones until it heals.
func TestAResetEndsEveryConnection(t *testing.T) {
	addr, ended := server(t)
	p := proxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := echo(t, c, r, "hello", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Cut(partition.Reset)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("a read after the reset: %v, want the connection reset", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the server's end outlived the reset")
	}
	n, err := net.Dial("tcp", p.Addr())
	if err == nil {
		n.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = n.Read(make([]byte, 1))
		n.Close()
	}
	if err == nil {
		t.Error("a new connection during the reset was answered")
	}
	p.Heal()
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := echo(t, again, bufio.NewReader(again), "healed", 5*time.Second); err != nil {
		t.Errorf("after the heal: %v", err)
	}
}

// A delayed link takes Delay each way, and keeps its writes' order without
// making one wait for another's delay: twenty lines sent at once come back
// in order, the last no later than about one round trip after the first.
func TestADelayedLinkDelaysEachWayAndKeepsOrder(t *testing.T) {
	addr, _ := server(t)
	p := proxy(t, addr)
	p.Delay = 25 * time.Millisecond
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	start := time.Now()
	if err := echo(t, c, r, "first", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*p.Delay {
		t.Fatalf("a round trip took %v, want at least twice the delay (%v)", rtt, 2*p.Delay)
	}
	const n = 20
	start = time.Now()
	for i := range n {
		if _, err := fmt.Fprintf(c, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // separate writes, each a chunk of its own
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range n {
		got, err := r.ReadString('\n')
		if err != nil || got != fmt.Sprintf("line %d\n", i) {
			t.Fatalf("echo %d = %q, %v; want the lines in order", i, got, err)
		}
	}
	// Serialized, twenty chunks would take twenty round trips (a second).
	if took := time.Since(start); took >= n*2*p.Delay {
		t.Errorf("twenty lines took %v: each waited for the one before", took)
	}
}
