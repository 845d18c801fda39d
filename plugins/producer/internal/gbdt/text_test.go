package gbdt

import (
	"strconv"
	"strings"
	"testing"
)

// TestTextFormat checks, on the text itself, the constraints leaves' parser
// imposes (it reads "key=value" lines split on '=', blocks separated by
// blank lines, at most two blank lines in a row) and the LightGBM layout.
func TestTextFormat(t *testing.T) {
	d := nonlinear(2000, 4, 0.1, 40)
	d.Names = []string{"ttft_ms", "queue_len", "x.2", "kv_util"}
	for _, loss := range []Loss{SquaredError, Quantile} {
		p := DefaultParams()
		p.Loss = loss
		m := mustTrain(t, d, p)
		text := string(modelText(t, m))
		body, _, ok := strings.Cut(text, "end of trees\n")
		if !ok {
			t.Fatalf("%v: no \"end of trees\" line", loss)
		}
		lines := strings.Split(body, "\n")
		if lines[0] != "tree" || lines[1] != "version=v3" {
			t.Fatalf("%v: header starts %q, %q; want \"tree\", \"version=v3\"", loss, lines[0], lines[1])
		}
		blank := 0
		for i, l := range lines[:len(lines)-1] {
			if strings.Count(l, "=") > 1 {
				t.Errorf("%v: line %d has '=' inside its value: %q", loss, i+1, l)
			}
			if l == "" {
				if blank++; blank > 2 {
					t.Errorf("%v: more than two blank lines in a row at line %d", loss, i+1)
				}
			} else {
				blank = 0
			}
		}

		header, trees, _ := strings.Cut(body, "\n\n")
		kv := map[string]string{}
		for _, l := range strings.Split(header, "\n")[1:] {
			k, v, _ := strings.Cut(l, "=")
			kv[k] = v
		}
		want := map[string]string{
			"num_class": "1", "num_tree_per_iteration": "1", "label_index": "0",
			"max_feature_idx": "3", "feature_names": "ttft_ms queue_len x.2 kv_util",
			"objective": "regression",
		}
		if loss == Quantile {
			want["objective"] = "quantile alpha:0.9"
		}
		for k, v := range want {
			if kv[k] != v {
				t.Errorf("%v: header %s=%q, want %q", loss, k, kv[k], v)
			}
		}
		if n := len(strings.Fields(kv["feature_infos"])); n != 4 {
			t.Errorf("%v: %d feature_infos, want 4", loss, n)
		}

		// Each tree block is exactly tree_sizes[i] bytes, starts with Tree=i
		// and ends with the two newlines that make the blank lines.
		sizes := strings.Fields(kv["tree_sizes"])
		if len(sizes) != m.NumTrees() {
			t.Fatalf("%v: %d tree_sizes for %d trees", loss, len(sizes), m.NumTrees())
		}
		rest := trees
		for i, s := range sizes {
			n, err := strconv.Atoi(s)
			if err != nil || n > len(rest) {
				t.Fatalf("%v: bad tree size %q", loss, s)
			}
			block := rest[:n]
			rest = rest[n:]
			if !strings.HasPrefix(block, "Tree="+strconv.Itoa(i)+"\n") || !strings.HasSuffix(block, "\n\n\n") {
				t.Fatalf("%v: tree %d block malformed:\n%s", loss, i, block)
			}
		}
		if rest != "" {
			t.Fatalf("%v: %d bytes after the last tree block", loss, len(rest))
		}
	}
}
