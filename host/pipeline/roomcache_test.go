package pipeline

import (
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The cache answers the slots a verdict reported with the room counts, for the endpoints it hits.
func TestRoomCacheKeepsTheSlots(t *testing.T) {
	var rc roomCache
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := &sdk.Cycle{Now: t0, Endpoints: []sdk.Endpoint{{ID: "a", State: sdk.EndpointState{MetricsAgeMs: 5}}, {ID: "b", State: sdk.EndpointState{MetricsAgeMs: 5}}}}
	rc.store(c, sdk.SaturationVerdict{Room: []int{1, 2}, Slots: []int{32, 0}})
	later := &sdk.Cycle{Now: t0.Add(time.Millisecond), Endpoints: []sdk.Endpoint{{ID: "b", State: sdk.EndpointState{MetricsAgeMs: 6}},
		{ID: "a", State: sdk.EndpointState{MetricsAgeMs: 6}}, {ID: "new"}}}
	room, slots, missed := rc.lookup(later)
	if !slices.Equal(room, []int{2, 1, 0}) || !slices.Equal(slots, []int{0, 32, 0}) || !slices.Equal(missed, []int{2}) {
		t.Errorf("room %v, slots %v, missed %v; want [2 1 0], [0 32 0], [2]", room, slots, missed)
	}
	rc.store(c, sdk.SaturationVerdict{Room: []int{1, 2}})
	if _, slots, _ := rc.lookup(later); slots != nil {
		t.Errorf("a verdict without slots: cached slots %v, want none", slots)
	}
}
