// Package kubeapi runs a real Kubernetes API server for tests: kube-apiserver over its own etcd,
// both built from the Go module tools/kubeapi (k8s.io/kubernetes and etcd at the versions its
// go.mod pins) into .tools/bin, as controller-runtime's envtest runs them, without its download.
//
//	s := kubeapi.Start(t)        // etcd, then kube-apiserver; both killed by t's cleanup
//	cs := s.Clientset(t)         // the admin (system:masters); s.Config is its *rest.Config
//	s.InstallCRDs(t, crdYAML)    // created, established, served by discovery
//	_, err := s.Create(ctx, manifests, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
//	cfg := s.Impersonating("system:serviceaccount:llm:router") // what RBAC grants a service account
//	path := s.Kubeconfig(t)      // a kubeconfig file of the admin
//
// Start builds the binaries first (ensureBinaries): a go build that finds them up to date takes
// well under a second, one that must compile Kubernetes takes minutes, which is why make test
// builds them first (make kube-apiserver). A build that fails fails the test, naming the target.
//
// Both processes listen on 127.0.0.1 only, on ports the kernel had free; their data, certificates
// and logs live in a temporary folder removed with the test. The API server serves TLS with a
// certificate of a CA made for it, authenticates the admin by a client certificate of that CA,
// authorizes with RBAC (the admin's group system:masters passes every check) and signs service
// account tokens with a key made for it. There is no controller manager, scheduler or kubelet: a
// pod's status is what a test writes with UpdateStatus, nothing deletes a terminating pod or
// finalizes a deleted namespace, and the ServiceAccount admission plugin is off (no controller
// creates a namespace's default service account). A server starts in a few seconds.
package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/foresight-router/foresight/internal/deathsig"
	"github.com/foresight-router/foresight/internal/freeport"
)

// StartTimeout bounds the start of etcd and of kube-apiserver, each: a few seconds on an idle
// machine, more while other packages' tests load its two cores.
const StartTimeout = 90 * time.Second

// ServiceClusterIPRange is the range the API server allocates Services' cluster IPs from.
const ServiceClusterIPRange = "10.96.0.0/16"

// Server is a running kube-apiserver with its etcd.
type Server struct {
	// Config reaches the API server as AdminUser. Each call of Start returns its own; copy it
	// (rest.CopyConfig) before changing it.
	Config *rest.Config
	// Dir holds the servers' files: etcd's data, the certificates, the logs (etcd.log and
	// kube-apiserver.log; etcd-2.log… for a start tried again). It is removed with the test.
	Dir string

	pki   *pki
	procs []*process // etcd and kube-apiserver, once started
}

// Start starts etcd and kube-apiserver for t and returns once the API server is ready (its
// /readyz answers ok). t's cleanup kills both processes, by their PIDs. It fails t when the
// binaries cannot be built or a server does not start; a port that another process took between
// its choice and the server's start is retried with new ports.
func Start(t testing.TB) *Server {
	t.Helper()
	b, err := ensureBinaries()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPKI()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: t.TempDir(), pki: p}
	files, err := p.write(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	const tries = 3
	for try := 1; ; try++ {
		err := s.start(t, b, files, try)
		if err == nil {
			return s
		}
		if try == tries || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("kubeapi: %v; again with other ports", err)
	}
}

// errPortTaken marks a start that failed because a port was taken.
var errPortTaken = errors.New("a port was taken")

// start runs etcd, then kube-apiserver over it, and waits until the API server is ready.
func (s *Server) start(t testing.TB, b binaries, f pkiFiles, try int) (err error) {
	var started []*process
	defer func() {
		if err != nil { // an attempt that failed leaves nothing running
			for _, p := range started {
				_ = p.stop()
			}
		}
	}()
	ports, err := freeport.Ports(3)
	if err != nil {
		return err
	}
	client, peer, secure := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	data, err := os.MkdirTemp(s.Dir, "etcd-data-")
	if err != nil {
		return err
	}
	logFile := func(name string) string {
		if try > 1 {
			name += fmt.Sprintf("-%d", try)
		}
		return filepath.Join(s.Dir, name+".log")
	}
	etcd, err := run(t, b.etcd, logFile("etcd"),
		"--name=test", "--data-dir="+data,
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		"--unsafe-no-fsync", // its data is thrown away with the test
		"--log-level=warn")
	if err != nil {
		return err
	}
	started = append(started, etcd)
	if err := etcd.await(etcdURL+"/health", &http.Client{Timeout: time.Second}, func(code int, body []byte) bool {
		return code == http.StatusOK && bytes.Contains(body, []byte(`"health":"true"`))
	}); err != nil {
		return err
	}
	host := "127.0.0.1:" + strconv.Itoa(secure)
	api, err := run(t, b.apiserver, logFile("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(secure),
		// The kubernetes Service's endpoints would be the loopback address, which the
		// reconciler refuses: nothing reaches the API server through that Service here.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+f.serveCert, "--tls-private-key-file="+f.serveKey, "--client-ca-file="+f.caCert,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+f.saKey, "--service-account-signing-key-file="+f.saKey,
		"--service-cluster-ip-range="+ServiceClusterIPRange,
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false")
	if err != nil {
		return err
	}
	started = append(started, api)
	s.Config = &rest.Config{
		Host:            "https://" + host,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.caCert, CertData: s.pki.clientCert, KeyData: s.pki.clientKey},
		// The tests' bursts of writes and watches, unthrottled by the client.
		QPS: 1000, Burst: 2000,
	}
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	hc.Timeout = 5 * time.Second
	if err := api.await(s.Config.Host+"/readyz", hc, func(code int, body []byte) bool {
		return code == http.StatusOK && string(body) == "ok"
	}); err != nil {
		return err
	}
	s.procs = started
	return nil
}

// Clientset returns a clientset of the admin, failing t when it cannot be made.
func (s *Server) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Impersonating returns a copy of Config that acts as user with groups: the API server
// authorizes its requests as that user's. A service account's user,
// system:serviceaccount:NAMESPACE:NAME, gets the service account's groups when groups is empty.
func (s *Server) Impersonating(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(s.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// process is a server Start runs.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once it exited
}

// run starts bin with args, its output in the file log, and registers its end with t's cleanup:
// it is killed (SIGKILL: its state is thrown away) and waited for, and the end of its log shown
// when t failed.
func run(t testing.TB, bin, log string, args ...string) (*process, error) {
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	deathsig.Arm(cmd) // no server outlives a test process killed before its cleanup
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{name: filepath.Base(bin), cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("the end of %s's log:\n%s", p.name, tail(p.log, 30))
		}
	})
	return p, nil
}

// stop kills the process, by its PID, and waits for it to exit; a second call only waits.
func (p *process) stop() error {
	_ = p.cmd.Process.Kill() // an error when it already exited
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit within 10s of SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// await polls url with hc until ok holds for its answer, and fails when the process exits or
// StartTimeout passes first; errPortTaken when the process's log says a port was in use.
func (p *process) await(url string, hc *http.Client, ok func(code int, body []byte) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err != nil {
			last = err.Error()
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ok(resp.StatusCode, body) {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		}
		select {
		case <-p.done:
			log := tail(p.log, 30)
			err := fmt.Errorf("%s exited before it was ready (%v); the end of its log:\n%s", p.name, p.cmd.ProcessState, log)
			if strings.Contains(log, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %v (GET %s: %s); the end of its log:\n%s", p.name, StartTimeout, url, last, tail(p.log, 30))
		case <-tick.C:
		}
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
