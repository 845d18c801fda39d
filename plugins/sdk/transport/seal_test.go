package transport

import (
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestSealedCycleIsReusedUntilCopied(t *testing.T) {
	c := testCycle("r")
	Seal(c)
	sealed := (*hooks.Slot(c)).(*wireCache)
	if w := encodingOf(c); w.msg != sealed.msg || w.bare != sealed.bare {
		t.Fatal("a sealed cycle should send its cached encoding")
	}
	if b := sealed.bare; b.GetId() != "r" || b.GetInputTokens() != 900 || len(b.GetPrefixBlockHashes()) != 0 ||
		len(sealed.msg.GetRequest().GetPrefixBlockHashes()) != 3 {
		t.Errorf("the sealed request without hashes is %v; the whole one %v", b, sealed.msg.GetRequest())
	}
	cp := *c
	cp.Seed = 99
	if got := encodingOf(&cp).msg; got == sealed.msg || got.GetSeed() != 99 {
		t.Errorf("a copy of a sealed cycle must be encoded afresh, got seed %d", got.GetSeed())
	}
}

func TestWithRoundCopiesAndKeepsTheSeal(t *testing.T) {
	c := testCycle("r")
	Seal(c)
	sealed := (*hooks.Slot(c)).(*wireCache)
	n := WithRound(c, sdk.Round{Position: 1, Size: 3})
	if n == c || c.Round != (sdk.Round{}) || n.Round != (sdk.Round{Position: 1, Size: 3}) {
		t.Fatalf("WithRound gave %p round %+v from %p, now round %+v; want a copy in the round and the original unchanged",
			n, n.Round, c, c.Round)
	}
	if w := encodingOf(n); w.msg != sealed.msg || w.bare != sealed.bare {
		t.Error("a sealed cycle's copy in a round should send the sealed encoding")
	}
	if got := (&projection{}).apply(encodingOf(n), n.Round).GetRound(); got.GetPosition() != 1 || got.GetSize() != 3 {
		t.Errorf("the copy travels in round %v, want position 1 of 3", got)
	}
	// Unsealed, the copy is encoded afresh, as any cycle.
	u := WithRound(testCycle("u"), sdk.Round{Position: 0, Size: 2})
	if _, ok := (*hooks.Slot(u)).(*wireCache); ok {
		t.Error("the copy of an unsealed cycle is sealed")
	}
}
