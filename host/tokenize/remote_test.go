package tokenize

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRemoteTokens(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + string(b)
		switch {
		case strings.Contains(string(b), "fail"):
			http.Error(w, `{"error":"no such model"}`, http.StatusNotFound)
		case strings.Contains(string(b), "none"):
			w.Write([]byte(`{"count":0}`))
		case strings.Contains(string(b), "slow"):
			time.Sleep(200 * time.Millisecond)
			w.Write([]byte(`{"tokens":[1]}`))
		default:
			w.Write([]byte(`{"count":3,"max_model_len":8192,"tokens":[128000,9906,1917]}`))
		}
	}))
	defer srv.Close()
	r := &Remote{Client: srv.Client(), Timeout: 50 * time.Millisecond}
	tokens, err := r.Tokens(context.Background(), srv.URL, []byte(`{"model":"m","prompt":"hello world"}`))
	if err != nil || !slices.Equal(tokens, []uint32{128000, 9906, 1917}) {
		t.Fatalf("Tokens = %v, %v", tokens, err)
	}
	if want := `POST /tokenize {"model":"m","prompt":"hello world"}`; got != want {
		t.Errorf("the engine got %q, want %q", got, want)
	}
	for _, body := range []string{`{"prompt":"fail"}`, `{"prompt":"none"}`, `{"prompt":"slow"}`} {
		if tokens, err := r.Tokens(context.Background(), srv.URL, []byte(body)); err == nil {
			t.Errorf("Tokens(%s) = %v, want an error", body, tokens)
		}
	}
}
