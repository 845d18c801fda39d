package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/foresight-router/foresight/internal/procstat"

	"github.com/foresight-router/foresight/internal/freeport"
)

// ReferenceNginx is the value of ProxyOptions.Reference that puts nginx beside the router.
const ReferenceNginx = "nginx"

// nginxPaths are where FindNginx looks for nginx after PATH: Debian and Ubuntu install it in
// /usr/sbin, which a user's PATH often lacks.
var nginxPaths = []string{"/usr/sbin/nginx"}

// FindNginx returns the path of the nginx binary bench proxy --reference nginx runs: the one on
// PATH, else /usr/sbin/nginx; or an error saying how to install it.
func FindNginx() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	for _, p := range nginxPaths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("--reference nginx: nginx is not installed (not on PATH, not at %s); install it (apt-get install nginx-light, or nginx) or leave out --reference",
		strings.Join(nginxPaths, ", "))
}

// nginxConfig is the configuration of nginx as a streaming reverse proxy on listen
// (127.0.0.1:port) in front of upstreams (host:port each), as one would put it in front of
// inference servers: each request to the upstream with the fewest active connections, replies
// relayed as they come (no buffering), HTTP/1.1 with kept-alive upstream connections, one
// worker per core, no access log. Its error log, pid file and temporary files live in dir, so
// that it runs as an unprivileged process and touches neither /etc nor /var.
func nginxConfig(dir, listen string, upstreams []string) string {
	var b strings.Builder
	p := func(name string) string { return filepath.Join(dir, name) }
	fmt.Fprintf(&b, "daemon off;\nworker_processes auto;\npid %s;\nerror_log %s warn;\n", p("nginx.pid"), p("error.log"))
	b.WriteString("events {\n    worker_connections 8192;\n}\n")
	b.WriteString("http {\n    access_log off;\n")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "    %s_temp_path %s;\n", t, p(t+"_temp"))
	}
	// Prompts of a long-context trace are a few hundred KB: kept in memory, not written to a
	// temporary file, as the router keeps them.
	b.WriteString("    client_max_body_size 0;\n    client_body_buffer_size 4m;\n")
	b.WriteString("    upstream servers {\n        least_conn;\n")
	for _, u := range upstreams {
		fmt.Fprintf(&b, "        server %s;\n", u)
	}
	b.WriteString("        keepalive 256;\n    }\n")
	fmt.Fprintf(&b, "    server {\n        listen %s;\n        location / {\n", listen)
	b.WriteString("            proxy_pass http://servers;\n            proxy_http_version 1.1;\n")
	b.WriteString("            proxy_set_header Connection \"\";\n            proxy_buffering off;\n")
	b.WriteString("        }\n    }\n}\n")
	return b.String()
}

// nginxProc is an nginx master process a bench started (with daemon off: the process it
// started), its workers its children.
type nginxProc struct {
	cmd    *exec.Cmd
	pid    int
	api    string // host:port on 127.0.0.1
	dir    string // its config, logs and temporary files
	exited chan struct{}
}

// startNginx writes nginxConfig for upstreams in a new temp dir, starts bin with it on a free
// loopback port and waits (at most timeout) until it relays GET /v1/models listing model. On
// error nothing is left running and the error says what nginx's error log said.
func startNginx(ctx context.Context, bin string, upstreams []string, model string, timeout time.Duration) (*nginxProc, error) {
	dir, err := os.MkdirTemp("", "foresight-bench-nginx-")
	if err != nil {
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	// Started as root, nginx runs its workers as nobody: they must reach their temporary paths.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	ports, err := freeport.Addrs(1)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, ports[0], upstreams)), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	n := &nginxProc{api: ports[0], dir: dir, exited: make(chan struct{})}
	// -e: the error log before the config is read (else /var/log/nginx); -p: the prefix for
	// relative paths, none of which the config uses.
	n.cmd = exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	n.pid = n.cmd.Process.Pid
	go func() {
		_ = n.cmd.Wait()
		close(n.exited)
	}()
	if err := n.waitReady(ctx, model, timeout); err != nil {
		n.Stop(time.Second)
		return nil, fmt.Errorf("%s -c %s: %w", bin, conf, err)
	}
	return n, nil
}

// waitReady waits until nginx relays the fleet's model list, giving up at timeout or when it exits.
func (n *nginxProc) waitReady(ctx context.Context, model string, timeout time.Duration) error {
	return pollReady(ctx, timeout, n.exited, func(ctx context.Context, client *http.Client) bool {
		return listsModel(ctx, client, "http://"+n.api+"/v1/models", model)
	}, func() error {
		return fmt.Errorf("nginx exited before it was ready: %s", n.errorLog())
	}, func() error {
		return fmt.Errorf("nginx at %s did not relay the model list (model %q) within %v: %s", n.api, model, timeout, n.errorLog())
	})
}

// errorLog returns the last line of nginx's error log, or a note that it is empty.
func (n *nginxProc) errorLog() string {
	data, err := os.ReadFile(filepath.Join(n.dir, "error.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err.Error()
	}
	t := &tail{max: 4 << 10}
	_, _ = t.Write(data)
	return t.last()
}

// Stop sends nginx's master SIGTERM (a fast shutdown: it stops its workers) and after grace
// SIGKILL, to its workers too, waits for it to exit and removes its temp dir.
func (n *nginxProc) Stop(grace time.Duration) {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(grace):
		workers := procstat.Children(procstat.Root, n.pid)
		_ = n.cmd.Process.Kill()
		for _, w := range workers {
			_ = syscall.Kill(w, syscall.SIGKILL)
		}
		<-n.exited
	}
	os.RemoveAll(n.dir)
}
