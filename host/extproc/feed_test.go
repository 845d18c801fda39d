package extproc

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/openai"
)

func hidingRelay(dst io.Writer, src io.Reader) error {
	_, err := openai.Relay(dst, src, openai.RelayOptions{HideUsage: true})
	return err
}

// TestFeedGivesEachPieceItsEvents: however Envoy cuts the stream into pieces, what the relay
// writes from them, piece by piece, is what it writes from the whole stream, and each piece's
// output holds whole events only: an event cut in two goes out with the piece that completes it.
func TestFeedGivesEachPieceItsEvents(t *testing.T) {
	stream := sse(3)
	var whole bytes.Buffer
	if err := hidingRelay(&whole, strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(whole.String(), "usage") || !strings.HasSuffix(whole.String(), "data: [DONE]\n\n") {
		t.Fatalf("the relay's output %q", whole.String())
	}
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j += 7 {
			f := startFeed(hidingRelay)
			var got bytes.Buffer
			for _, piece := range []string{stream[:i], stream[i:j], stream[j:]} {
				out := f.push([]byte(piece))
				if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
					t.Fatalf("cut at %d and %d: a piece's output %q ends inside an event", i, j, out)
				}
				got.Write(out)
			}
			rest, err := f.end()
			got.Write(rest)
			if err != nil || got.String() != whole.String() {
				t.Fatalf("cut at %d and %d: %q, %v; want %q", i, j, got.String(), err, whole.String())
			}
		}
	}
}

// TestFeedAfterTheRelayGaveUp: a body that is not a stream ends the relay; the rest passes
// through as it is and end reports why.
func TestFeedAfterTheRelayGaveUp(t *testing.T) {
	f := startFeed(hidingRelay)
	first := f.push([]byte("data: not json\n\n"))
	second := f.push([]byte("more"))
	rest, err := f.end()
	if err == nil || !strings.Contains(string(first)+string(second)+string(rest), "more") {
		t.Errorf("outputs %q %q %q, err %v: want the rest passed through and the relay's error", first, second, rest, err)
	}
}
