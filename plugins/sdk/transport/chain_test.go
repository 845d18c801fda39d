package transport

import (
	"slices"
	"strings"
	"testing"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// The host never trusts a fused call's indices: a step may only keep what the step before it
// kept, and once a step breaks that, the plugin's view of the cycle is not the host's, so every
// later step is refused too.
func TestChainStepsRefuseAStepThatKeepsWhatWasDropped(t *testing.T) {
	steps := []*pb.FilterResult{
		{Kept: []uint32{1, 2}},
		{Status: &pb.Status{Code: pb.StatusCode_STATUS_CODE_ERROR, Message: "failed"}},
		{Kept: []uint32{2}},
		{Kept: []uint32{0, 2}}, // 0 was dropped by step 0
		{Kept: []uint32{2}},
		{Kept: []uint32{2}}, // beyond the chain's length: ignored
	}
	got := chainSteps(steps, 5, 3)
	if len(got) != 5 {
		t.Fatalf("%d steps, want 5", len(got))
	}
	if !slices.Equal(got[0].Value.Kept, []int{1, 2}) || got[1].Err == nil || !slices.Equal(got[2].Value.Kept, []int{2}) {
		t.Errorf("valid steps: %+v", got[:3])
	}
	for _, k := range []int{3, 4} {
		if got[k].Err == nil || !strings.Contains(got[k].Err.Error(), "broken at step 3") {
			t.Errorf("step %d: %v, want the chain broken at step 3", k, got[k].Err)
		}
	}
	if got := chainSteps([]*pb.FilterResult{{Kept: []uint32{3}}}, 1, 3); got[0].Err == nil {
		t.Error("an index out of range was accepted")
	}
}
