package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/rs/zerolog"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting file descriptors needs /proc: %v", err)
	}
	return len(ents)
}

// heldConns are client connections to the router that the router should cut off by itself; each
// has a reader that notes when the router closed it.
type heldConns struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed atomic.Int64 // connections the router closed
	wg     sync.WaitGroup
}

// add keeps c and watches for the router closing it, reading through r (which may hold bytes of
// c already read).
func (h *heldConns) add(c net.Conn, r io.Reader) {
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_, _ = io.Copy(io.Discard, r) // returns when the router closes the connection
		h.closed.Add(1)
	}()
}

func (h *heldConns) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
}

// The router holds 1,000 kept-alive idle connections, 1,000 that never send a byte and 500
// clients sending their headers a field at a time, answers a normal request while every one of
// them is still open, cuts them all off by itself (server.readHeaderTimeout and
// server.idleTimeout), and its goroutines and file descriptors come back to where they were.
func TestSlowAndIdleClientsCannotHoldTheRouter(t *testing.T) {
	const keptAlive, silent, slow = 1000, 1000, 500
	fleet, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	yaml := fmt.Sprintf(`
plugins:
  - {name: queue, type: queue-scorer}
pipeline:
  scorers: [{pluginRef: queue}]
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", readHeaderTimeout: 4s, idleTimeout: 4s}
endpoints:
  static: [{id: vllm-0, address: %q}]
`, fleet.Addrs()[0])
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	chat := func() (int, error) {
		body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"Name a river."}],"max_tokens":4}`
		resp, err := client.Post("http://"+r.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	waitFor(t, "a first answer through the router", func() bool { code, err := chat(); return err == nil && code == http.StatusOK })
	baseGoroutines, baseFDs := runtime.NumGoroutine(), openFDs(t)

	var held heldConns
	dial := func() net.Conn {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatalf("dialling the router: %v", err)
		}
		return c
	}
	for range keptAlive {
		c := dial()
		if _, err := io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: router\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET /v1/models on a kept-alive connection: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held.add(c, br)
	}
	for range silent {
		c := dial()
		held.add(c, c)
	}
	stop := make(chan struct{})
	var trickle sync.WaitGroup
	for range slow {
		c := dial()
		if _, err := io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: router\r\n"); err != nil {
			t.Fatal(err)
		}
		held.add(c, c)
		trickle.Add(1)
		go func() { // one more header field every 200 ms, never the blank line
			defer trickle.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := io.WriteString(c, "X-Slow: 1\r\n"); err != nil {
						return
					}
				}
			}
		}()
	}

	code, err := chat()
	if err != nil || code != http.StatusOK {
		t.Fatalf("a normal request among %d held connections: status %d, %v", keptAlive+silent+slow, code, err)
	}
	if n := held.closed.Load(); n != 0 {
		t.Errorf("%d held connections were closed before the normal request was answered; the test wants them all open then (a slow machine?)", n)
	}

	eventually.Wait(t, 30*time.Second, "the router to close every held connection", func() bool { return held.closed.Load() == keptAlive+silent+slow })
	close(stop)
	trickle.Wait()
	held.closeAll()
	held.wg.Wait()
	client.CloseIdleConnections()
	waitFor(t, "goroutines and file descriptors back to their baseline", func() bool {
		return runtime.NumGoroutine() <= baseGoroutines+2 && openFDs(t) <= baseFDs+2
	})
}
