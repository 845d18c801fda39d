package endpoints

import (
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
