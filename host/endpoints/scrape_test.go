package endpoints

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestScrapeAsksNoCompression: prometheus_client (vLLM's and SGLang's exporter) gzips /metrics
// for a client that accepts it, and net/http's client asks for gzip unless told not to; on a
// scrape every 50 ms, the engine would compress and the router decompress tens of kilobytes for
// nothing. The scrapes ask for the body as it is.
func TestScrapeAsksNoCompression(t *testing.T) {
	var mu sync.Mutex
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			mu.Lock()
			got = append(got, r.Header.Get("Accept-Encoding"))
			mu.Unlock()
		}
		_, _ = w.Write([]byte(vllmBody(1, 2, 0.5)))
	}))
	t.Cleanup(ts.Close)
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"the loop's own connection (no Client given)", Config{}},
		{"DefaultClient()", Config{Client: DefaultClient()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			s, err := New(tt.cfg, []Endpoint{{ID: "e", Address: addr(ts)}})
			if err != nil {
				t.Fatal(err)
			}
			stop := run(t, s)
			waitFor(t, "a scrape", func() bool { st, _ := s.Get("e"); return !st.ScrapedAt.IsZero() })
			stop()
			mu.Lock()
			defer mu.Unlock()
			for _, enc := range got {
				if strings.Contains(enc, "gzip") {
					t.Errorf("a scrape asked for Accept-Encoding %q", enc)
				}
			}
		})
	}
}

// BenchmarkScrape is one whole scrape over loopback, the server's work included: the loop's own
// connection against net/http's client (whose transport hands each request to the connection's
// writer and reader goroutines).
func BenchmarkScrape(b *testing.B) {
	body := []byte(vllmBody(1, 2, 0.5))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	defer ts.Close()
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"own connection", Config{}}, {"http.Client", Config{Client: DefaultClient()}}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := bc.cfg.withDefaults()
			if err != nil {
				b.Fatal(err)
			}
			sc := newScraper(cfg, Endpoint{ID: "e", Address: ts.URL})
			defer sc.close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sc.scrape(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
