package predictor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// captureLog sends the plugin's log to a buffer for the test.
func captureLog(t *testing.T) *logbuf.Buffer {
	t.Helper()
	buf := &logbuf.Buffer{}
	old := *sdk.Log()
	*sdk.Log() = zerolog.New(buf)
	t.Cleanup(func() { *sdk.Log() = old })
	return buf
}

// TestACorruptModelFallsBack: a model directory whose version in service cannot be served never
// stops the producer from starting. It serves the newest intact version instead, or starts cold,
// and says so: a warning for each version passed over, then the model it loaded or "no model:
// cold start".
func TestACorruptModelFallsBack(t *testing.T) {
	corrupt := func(t *testing.T, version string) { // an edited file: its checksum no longer matches
		if err := os.WriteFile(filepath.Join(version, model.TPOTFile), []byte("tree\nversion=v3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// damage breaks the saved versions: current is the one in service, previous the one before.
		damage   func(t *testing.T, dir, current, previous string)
		previous bool     // the previous version is served, else none (a cold start)
		says     []string // in the log, in order (a line's error comes before its message)
	}{
		{"a corrupt current version", func(t *testing.T, dir, current, previous string) { corrupt(t, current) },
			true, []string{"checksums", "model version unusable", "model loaded"}},
		{"a dangling current link", func(t *testing.T, dir, current, previous string) {
			if err := os.RemoveAll(current); err != nil {
				t.Fatal(err)
			}
		}, true, []string{"cannot be read", "model version unusable", "model loaded"}},
		{"every version corrupt", func(t *testing.T, dir, current, previous string) {
			corrupt(t, current)
			corrupt(t, previous)
		}, false, []string{"checksums", "model version unusable", "checksums", "model version unusable", "no intact model version", "no model: cold start"}},
		{"the only version gone", func(t *testing.T, dir, current, previous string) {
			for _, v := range []string{current, previous} {
				if err := os.RemoveAll(v); err != nil {
					t.Fatal(err)
				}
			}
		}, false, []string{"cannot be read", "no model: cold start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			trainedProducer(t, map[string]any{"modelDir": dir})
			versions, _ := filepath.Glob(filepath.Join(dir, "v*"))
			target, err := os.Readlink(filepath.Join(dir, "current"))
			if len(versions) != 2 || err != nil {
				t.Fatalf("the trained producer left versions %v, current %q (%v): want two", versions, target, err)
			}
			current, previous := filepath.Join(dir, target), versions[0]
			if previous == current {
				previous = versions[1]
			}
			meta, err := os.ReadFile(filepath.Join(previous, model.MetaFile))
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir, current, previous)

			log := captureLog(t)
			p := New()
			configure(t, p, map[string]any{"modelDir": dir})
			got := p.Stats().ModelVersion
			switch {
			case tt.previous && (got == 0 || !strings.Contains(string(meta), `"version": `+strconv.FormatUint(uint64(got), 10))):
				t.Errorf("serving version %d, want the previous one (%s)", got, previous)
			case !tt.previous && got != 0:
				t.Errorf("serving version %d, want a cold start", got)
			}
			rest := log.String()
			for _, s := range tt.says {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("the log lacks %q (in order %q):\n%s", s, tt.says, log)
				}
				rest = rest[i+len(s):]
			}
			if tt.previous && !strings.Contains(log.String(), `"path":"`+previous+`"`) {
				t.Errorf("the log does not name the version loaded, %s:\n%s", previous, log)
			}
		})
	}
}

// TestEveryStartSaysWhichModel: a start without a saved model says it is a cold start, and why.
func TestEveryStartSaysWhichModel(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]any
		reason string
	}{
		{"no modelDir", map[string]any{}, `parameter \"modelDir\" is not set`},
		{"an empty modelDir", map[string]any{"modelDir": t.TempDir()}, "no model in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := captureLog(t)
			configure(t, New(), tt.params)
			if s := log.String(); !strings.Contains(s, "no model: cold start") || !strings.Contains(s, tt.reason) {
				t.Errorf("the log says %q: want a cold start because %s", s, tt.reason)
			}
		})
	}
}
