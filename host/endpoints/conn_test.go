package endpoints

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConn scrapes a server three times over the loop's own connection, for each way a server
// may frame or end its answers: every scrape reads the gauges or fails with the reason, and the
// connection is kept while the server allows it.
func TestConn(t *testing.T) {
	body := vllmBody(1, 2, 0.5)
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		// between runs between the scrapes (e.g. the server drops its idle connections).
		between   func(ts *httptest.Server)
		wantErr   string // every scrape's, "" for none
		wantConns int    // connections the server saw
	}{{
		name:      "Content-Length: one connection for every scrape",
		handler:   func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) },
		wantConns: 1,
	}, {
		name: "chunked",
		handler: func(w http.ResponseWriter, r *http.Request) {
			for line := range strings.Lines(body) {
				_, _ = w.Write([]byte(line))
				w.(http.Flusher).Flush()
			}
		},
		wantConns: 1,
	}, {
		name: "Connection: close: dialed again for each scrape",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte(body))
		},
		wantConns: 3,
	}, {
		name:      "the server closed the idle connection: dialed again, no failure",
		handler:   func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) },
		between:   func(ts *httptest.Server) { ts.CloseClientConnections() },
		wantConns: 3,
	}, {
		name:      "a 502 fails the scrape and drops the connection",
		handler:   func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) },
		wantErr:   "status 502 Bad Gateway",
		wantConns: 3,
	}, {
		name: "a body over MaxBodyBytes",
		handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(body + strings.Repeat("#\n", MaxBodyBytes/2)))
		},
		wantErr:   "body larger than",
		wantConns: 3,
	}, {
		name: "a required metric missing",
		handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("vllm:num_requests_waiting 1\n"))
		},
		wantErr:   `metric "vllm:num_requests_running" missing`,
		wantConns: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			conns := 0
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/pool/metrics" || r.Header.Get("Accept") != textFormat || r.Host == "" {
					http.Error(w, "unexpected request "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
					return
				}
				tt.handler(w, r)
			}))
			ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					conns++
					mu.Unlock()
				}
			}
			ts.Start()
			t.Cleanup(ts.Close)
			cfg, err := Config{}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			sc := newScraper(cfg, Endpoint{ID: "e", Address: ts.URL + "/pool"})
			if sc.metrics == nil {
				t.Fatal("no connection of its own for an http endpoint with the default client")
			}
			defer sc.close()
			for i := range 3 {
				if i > 0 && tt.between != nil {
					tt.between(ts)
				}
				g, err := sc.scrape(context.Background())
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("scrape %d: %v", i, err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Fatalf("scrape %d: error %v, want one with %q", i, err, tt.wantErr)
				case tt.wantErr == "" && (g.waiting != 1 || g.running != 2 || g.kvCacheUsage != 0.5):
					t.Fatalf("scrape %d: %+v", i, g)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if conns != tt.wantConns {
				t.Errorf("the server saw %d connections, want %d", conns, tt.wantConns)
			}
		})
	}
}

// TestConnRedirected: a /metrics that redirects (a metrics app mounted at /metrics/, say) is
// followed, as the client would, and the scrapes go through the client from then on.
func TestConnRedirected(t *testing.T) {
	var mu sync.Mutex
	redirects := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		redirects++
		mu.Unlock()
		http.Redirect(w, r, "/metrics/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/metrics/", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(vllmBody(1, 2, 0.5))) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	sc := newScraper(cfg, Endpoint{ID: "e", Address: ts.URL})
	defer sc.close()
	for i := range 3 {
		if g, err := sc.scrape(context.Background()); err != nil || g.running != 2 {
			t.Fatalf("scrape %d: %+v, %v", i, g, err)
		}
	}
	if sc.metrics != nil {
		t.Error("still scraping over its own connection after a redirect")
	}
	mu.Lock()
	defer mu.Unlock()
	if redirects != 4 { // one on the own connection, then one per scrape through the client
		t.Errorf("%d redirects, want 4", redirects)
	}
	cfg.Client.CloseIdleConnections()
}

// TestConnInterrupted: a scrape waiting on a server that does not answer ends when the loop's
// context ends, or at the scrape timeout.
func TestConnInterrupted(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	cfg, err := Config{Timeout: time.Hour}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	sc := newScraper(cfg, Endpoint{ID: "e", Address: ts.URL})
	defer sc.close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := sc.scrape(ctx)
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a scrape without an answer succeeded")
		}
	case <-time.After(deadline):
		t.Fatalf("the scrape did not end within %v of its context", deadline)
	}

	sc.timeout = 10 * time.Millisecond
	if _, err := sc.scrape(context.Background()); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a scrape past its timeout: %v, want an i/o timeout", err)
	}
}

// TestConnOnlyForPlainHTTP: an https endpoint, or a client of the caller's, is read with the
// client.
func TestConnOnlyForPlainHTTP(t *testing.T) {
	def, _ := Config{}.withDefaults()
	own, _ := Config{Client: &http.Client{}}.withDefaults()
	for _, tt := range []struct {
		name    string
		cfg     Config
		address string
		want    bool
	}{
		{"host:port", def, "127.0.0.1:8000", true},
		{"http URL with a path", def, "http://vllm.example/pool-a", true},
		{"https", def, "https://vllm.example", false},
		{"the caller's client", own, "127.0.0.1:8000", false},
	} {
		if got := newScraper(tt.cfg, Endpoint{ID: "e", Address: tt.address}).metrics != nil; got != tt.want {
			t.Errorf("%s: own connection %v, want %v", tt.name, got, tt.want)
		}
	}
}
