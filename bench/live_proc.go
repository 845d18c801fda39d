package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/foresight-router/foresight/internal/freeport"
)

// RouterProc is a `foresight serve` process a bench started (bench live, proxy and soak): the
// router exactly as a user runs it, in its own process group (its plugin processes with it), so
// that a terminal's Ctrl-C reaches the bench only and the bench stops it itself.
type RouterProc struct {
	cmd        *exec.Cmd
	pid        int
	api, admin string // host:port on 127.0.0.1
	out        *tail  // its stdout and stderr, the last few KB
	access     *accessLog
	exited     chan struct{}
	stopOnce   sync.Once
}

// StartRouter starts `bin serve --config config --endpoints … --listen … --admin … args…` on
// free loopback ports and waits (at most timeout) until it is ready: its admin listener answers
// /health and its API lists model. A port taken between choosing and binding it (the router
// exits saying so) is retried with new ports, twice. On error nothing is left running.
func StartRouter(ctx context.Context, bin, config string, endpoints, args []string, model string, timeout time.Duration) (*RouterProc, error) {
	for attempt := 0; ; attempt++ {
		p, err := spawnRouter(bin, config, endpoints, args)
		if err != nil {
			return nil, err
		}
		err = p.waitReady(ctx, model, timeout)
		if err == nil {
			return p, nil
		}
		p.Stop(time.Second)
		if attempt == 2 || !strings.Contains(p.out.String(), "address already in use") {
			return nil, fmt.Errorf("%s serve --config %s: %w", bin, config, err)
		}
	}
}

// spawnRouter starts `bin serve` on free loopback ports with the extra args, without waiting for it.
func spawnRouter(bin, config string, endpoints, args []string) (*RouterProc, error) {
	ports, err := freeport.Addrs(2)
	if err != nil {
		return nil, err
	}
	p, err := spawn(bin, append([]string{"serve", "--config", config, "--endpoints", strings.Join(endpoints, ","),
		"--listen", ports[0], "--admin", ports[1]}, args...)...)
	if err != nil {
		return nil, err
	}
	p.api, p.admin = ports[0], ports[1]
	return p, nil
}

// spawn starts bin with args in a process group of its own, its output kept in a tail.
func spawn(bin string, args ...string) (*RouterProc, error) {
	p := &RouterProc{out: &tail{max: 16 << 10}, access: newAccessLog(), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	w := io.MultiWriter(p.out, p.access) // one writer for both, so one goroutine writes at a time
	p.cmd.Stdout, p.cmd.Stderr = w, w
	// Its own group, which also holds its plugin processes: stop kills the group when SIGTERM is
	// not enough. Pdeathsig: should the bench die without stopping it, the kernel sends SIGTERM.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the router process's id (its process group's too).
func (p *RouterProc) PID() int { return p.pid }

// API is the host:port of the router's OpenAI listener on 127.0.0.1; Admin that of its admin
// listener.
func (p *RouterProc) API() string   { return p.api }
func (p *RouterProc) Admin() string { return p.admin }

// ExitCode is the router's exit status, -1 when a signal ended it; ok is false while it runs.
func (p *RouterProc) ExitCode() (code int, ok bool) {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), true
	default:
		return 0, false
	}
}

// waitReady waits until the admin listener answers /health and the API lists model: the router
// has scraped the fleet. It gives up at timeout, or when the process exits.
func (p *RouterProc) waitReady(ctx context.Context, model string, timeout time.Duration) error {
	return pollReady(ctx, timeout, p.exited, func(ctx context.Context, client *http.Client) bool {
		return healthy(ctx, client, "http://"+p.admin+"/health") && listsModel(ctx, client, "http://"+p.api+"/v1/models", model)
	}, func() error {
		return fmt.Errorf("the router exited before it was ready: %s", p.out.last())
	}, func() error {
		return fmt.Errorf("the router at %s was not ready (admin /health, model %q listed) within %v: %s", p.api, model, timeout, p.out.last())
	})
}

// pollReady asks ready every 50 ms, over a loopback client without a proxy, until it says yes
// (nil), the process whose exit closes exited has exited (exitedErr's error) or timeout has
// passed (timeoutErr's).
func pollReady(ctx context.Context, timeout time.Duration, exited <-chan struct{}, ready func(context.Context, *http.Client) bool,
	exitedErr, timeoutErr func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready(ctx, client) {
		select {
		case <-exited:
			return exitedErr()
		case <-ctx.Done():
			return timeoutErr()
		case <-tick.C:
		}
	}
	return nil
}

// get sends GET url; the caller closes the body.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// healthy reports whether GET url answers 200.
func healthy(ctx context.Context, client *http.Client, url string) bool {
	resp, err := get(ctx, client, url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// listsModel reports whether the OpenAI model list at url has model.
func listsModel(ctx context.Context, client *http.Client, url, model string) bool {
	resp, err := get(ctx, client, url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return false
	}
	for _, m := range list.Data {
		if m.ID == model {
			return true
		}
	}
	return false
}

// Stop sends the router SIGTERM (it lets requests in flight finish and stops its plugins), and
// after grace kills its whole process group; it returns once the router has exited. Leftovers
// of the group (a plugin the router did not stop) are killed too. Safe to call more than once
// and from several goroutines.
func (p *RouterProc) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			<-p.exited
		}
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // ESRCH when the group is empty, as it should be
	})
	<-p.exited
}

// tail keeps the last max bytes written to it; safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write appends b, dropping the oldest bytes beyond max.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// String returns what is kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// last returns the last non-empty line kept, or a note that there was no output.
func (t *tail) last() string {
	lines := strings.Split(strings.TrimSpace(t.String()), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "no output"
}
