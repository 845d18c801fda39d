package transport

import "testing"

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
