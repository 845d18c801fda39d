package engine

import (
	"strings"
	"testing"
)

func TestFleetCyclesItemsOverServers(t *testing.T) {
	got, err := Fleet("llama-3.1-8b-h100-tp2, sim-8b-h100-32slots@2", 5)
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := Preset("llama-3.1-8b-h100-tp2")
	slot, _ := Preset("sim-8b-h100-32slots")
	slot.Speed = 2
	want := []Config{batch, slot, batch, slot, batch}
	if len(got) != len(want) {
		t.Fatalf("%d configs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Speed != want[i].Speed || got[i].Family != want[i].Family || got[i].NumGPUBlocks != want[i].NumGPUBlocks {
			t.Errorf("server %d: speed %v family %v, want speed %v family %v", i, got[i].Speed, got[i].Family, want[i].Speed, want[i].Family)
		}
	}
	if err := got[1].Validate(); err != nil {
		t.Errorf("a slowed preset does not validate: %v", err)
	}
}

func TestFleetReportsEveryBadItem(t *testing.T) {
	for _, tt := range []struct {
		spec string
		n    int
		want []string
	}{
		{"nope,llama-3.1-8b-h100-tp2@0,llama-3.1-8b-h100-tp2@x", 2,
			[]string{`unknown engine preset "nope"`, `factor of "llama-3.1-8b-h100-tp2" must be a finite number > 0`, `got "x"`}},
		{"llama-3.1-8b-h100-tp2,", 2, []string{`empty preset name`}},
		{"@2", 2, []string{`empty preset name in "@2"`}},
		{"llama-3.1-8b-h100-tp2@-1", 2, []string{`got "-1"`}},
		{"llama-3.1-8b-h100-tp2@Inf", 2, []string{`got "Inf"`}},
		{"llama-3.1-8b-h100-tp2", 0, []string{"at least 1 server"}},
	} {
		_, err := Fleet(tt.spec, tt.n)
		if err == nil {
			t.Errorf("Fleet(%q, %d) accepted", tt.spec, tt.n)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Fleet(%q, %d) = %v, want it to say %s", tt.spec, tt.n, err, w)
			}
		}
	}
}
