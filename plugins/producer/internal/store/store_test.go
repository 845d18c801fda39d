package store

import (
	"strconv"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func sample(id int, waiting int64, kv, prefix float64) sdk.Sample {
	return sdk.Sample{Request: sdk.Request{ID: strconv.Itoa(id)},
		State: sdk.EndpointState{Waiting: waiting, KVCacheUsage: kv, PrefixMatch: prefix}, ActualTTFTMs: float64(id)}
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		waiting    int64
		kv, prefix float64
		want       int
	}{
		{0, 0, 0, 0},
		{1, 0, 0, 1 * kvBuckets * prefixBuckets},
		{2, 0, 0, 1 * kvBuckets * prefixBuckets},
		{3, 0, 0, 2 * kvBuckets * prefixBuckets},
		{11, 0, 0, 4 * kvBuckets * prefixBuckets},
		{0, 0.049, 0, 0},
		{0, 0.05, 0, prefixBuckets},
		{0, 1, 1, 20*prefixBuckets + 4},
		{0, 1.7, 2, 20*prefixBuckets + 4}, // out of range: clamped
		{-1, -0.2, -1, 0},
	}
	for _, tt := range tests {
		st := sdk.EndpointState{Waiting: tt.waiting, KVCacheUsage: tt.kv, PrefixMatch: tt.prefix}
		if got := bucket(&st); got != tt.want {
			t.Errorf("bucket(waiting %d, kv %v, prefix %v) = %d, want %d", tt.waiting, tt.kv, tt.prefix, got, tt.want)
		}
	}
}

// TestRareRegimesAreRemembered fills one regime far past its cap and checks that the other
// regime's samples survive, while the busy one keeps only its newest.
func TestRareRegimesAreRemembered(t *testing.T) {
	s := New(10, 0, 0)
	for i := range 3 {
		s.Add(sample(i, 0, 0.02, 0)) // rare: cold and idle
	}
	for i := 100; i < 1100; i++ {
		s.Add(sample(i, 4, 0.6, 0.8)) // the current regime, 1000 samples
	}
	got := s.Training(nil)
	if len(got) != 13 || s.Len() != 13 {
		t.Fatalf("%d training samples (Len %d), want 3 + 10", len(got), s.Len())
	}
	for i, smp := range got[:3] {
		if smp.ActualTTFTMs != float64(i) {
			t.Errorf("rare sample %d: %v", i, smp.ActualTTFTMs)
		}
	}
	for i, smp := range got[3:] { // the newest 10 of the busy regime, oldest first
		if want := float64(1090 + i); smp.ActualTTFTMs != want {
			t.Errorf("busy sample %d: %v, want %v", i, smp.ActualTTFTMs, want)
		}
	}
	if s.Added() != 1003 {
		t.Errorf("Added %d, want 1003", s.Added())
	}
	s.MarkTrained()
	if s.Added() != 0 {
		t.Errorf("Added after MarkTrained %d", s.Added())
	}
}

func TestHoldoutIsReproducibleAndAboutOneInN(t *testing.T) {
	a, b := New(1000, 10, 5000), New(1000, 10, 5000)
	held := 0
	for i := range 10000 {
		if !a.Add(sample(i, 0, 0.5, 0.5)) {
			held++
		}
		b.Add(sample(i, 0, 0.5, 0.5))
	}
	if held < 850 || held > 1150 {
		t.Errorf("held out %d of 10000, want about 1000", held)
	}
	ha, hb := a.Holdout(nil), b.Holdout(nil)
	if len(ha) != held || len(hb) != held {
		t.Fatalf("holdout sizes %d and %d, want %d", len(ha), len(hb), held)
	}
	for i := range ha {
		if ha[i].Request.ID != hb[i].Request.ID {
			t.Fatalf("holdout %d differs: %s vs %s", i, ha[i].Request.ID, hb[i].Request.ID)
		}
	}
	if a.Added() != uint64(10000-held) {
		t.Errorf("Added %d, want %d", a.Added(), 10000-held)
	}
}
