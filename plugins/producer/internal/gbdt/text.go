package gbdt

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteText writes the model in LightGBM's text format, version v3, as
// LightGBM 3.x would for a numerical-only regression model: header, tree
// blocks separated by two blank lines, "end of trees", feature importances
// and parameters. github.com/dmitryikh/leaves loads it with
// LGEnsembleFromReader(r, loadTransformation): true for Gamma, whose
// predictions are exp of the trees' sum; false for the others, which have no
// transformation, and because leaves cannot parse the "quantile alpha:0.9"
// objective line (LightGBM's own spelling) when asked for one.
func (m *Model) WriteText(w io.Writer) error {
	blocks := make([]string, len(m.trees))
	sizes := make([]string, len(m.trees))
	for i, t := range m.trees {
		blocks[i] = treeBlock(i, t)
		sizes[i] = strconv.Itoa(len(blocks[i]))
	}

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n")
	fmt.Fprintf(bw, "max_feature_idx=%d\n", len(m.names)-1)
	fmt.Fprintf(bw, "objective=%s\n", m.objective())
	fmt.Fprintf(bw, "feature_names=%s\n", strings.Join(m.names, " "))
	fmt.Fprintf(bw, "feature_infos=%s\n", strings.Join(m.infos, " "))
	fmt.Fprintf(bw, "tree_sizes=%s\n\n", strings.Join(sizes, " "))
	for _, b := range blocks {
		bw.WriteString(b)
	}
	bw.WriteString("end of trees\n\n")
	m.writeImportances(bw)
	m.writeParameters(bw)
	bw.WriteString("pandas_categorical:null\n")
	return bw.Flush()
}

// objective is the objective line as LightGBM writes it.
func (m *Model) objective() string {
	switch m.params.Loss {
	case Quantile:
		return "quantile alpha:" + formatFloat(m.params.Alpha)
	case Gamma:
		return "gamma"
	}
	return "regression"
}

// treeBlock renders one tree, including the two trailing newlines that
// LightGBM counts in tree_sizes. Every split is numerical with
// decision_type=2 (default_left set, missing_type None): leaves then maps NaN
// to 0 before comparing, as Model.Predict does.
func treeBlock(i int, t *tree) string {
	var b strings.Builder
	line := func(key, val string) {
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(val)
		b.WriteByte('\n')
	}
	line("Tree", strconv.Itoa(i))
	line("num_leaves", strconv.Itoa(t.numLeaves()))
	line("num_cat", "0")
	line("split_feature", joinInts(t.splitFeature))
	line("split_gain", joinFloats(t.splitGain))
	line("threshold", joinFloats(t.threshold))
	decision := make([]string, len(t.splitFeature))
	for k := range decision {
		decision[k] = "2"
	}
	line("decision_type", strings.Join(decision, " "))
	line("left_child", joinInts(t.left))
	line("right_child", joinInts(t.right))
	line("leaf_value", joinFloats(t.leafValue))
	line("leaf_weight", joinFloats(t.leafWeight))
	line("leaf_count", joinInts(t.leafCount))
	line("internal_value", joinFloats(t.internalValue))
	line("internal_weight", joinFloats(t.internalWeight))
	line("internal_count", joinInts(t.internalCount))
	line("is_linear", "0")
	line("shrinkage", formatFloat(t.shrinkage))
	b.WriteString("\n\n")
	return b.String()
}

// writeImportances writes the features used in splits, most used first, as
// LightGBM's "feature_importances:" section.
func (m *Model) writeImportances(w *bufio.Writer) {
	counts := m.splitCounts()
	order := make([]int, 0, len(counts))
	for f, c := range counts {
		if c > 0 {
			order = append(order, f)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return counts[b] - counts[a] })
	w.WriteString("feature_importances:\n")
	for _, f := range order {
		fmt.Fprintf(w, "%s=%d\n", m.names[f], counts[f])
	}
	w.WriteString("\n")
}

// writeParameters records the training parameters under LightGBM's names.
func (m *Model) writeParameters(w *bufio.Writer) {
	p := m.params
	maxDepth := p.MaxDepth
	maxDepth = cmp.Or(maxDepth, -1) // LightGBM's "no limit"
	bagFreq := "1"                  // a fresh sample for every tree
	if p.Subsample == 1 {
		bagFreq = "0"
	}
	kv := [][2]string{
		{"boosting", "gbdt"},
		{"objective", p.Loss.String()},
		{"num_iterations", strconv.Itoa(p.Trees)},
		{"learning_rate", formatFloat(p.LearningRate)},
		{"num_leaves", strconv.Itoa(p.NumLeaves)},
		{"max_depth", strconv.Itoa(maxDepth)},
		{"min_data_in_leaf", strconv.Itoa(p.MinSamplesLeaf)},
		{"min_sum_hessian_in_leaf", formatFloat(p.MinChildWeight)},
		{"bagging_fraction", formatFloat(p.Subsample)},
		{"bagging_freq", bagFreq},
		{"bagging_seed", strconv.FormatUint(p.Seed, 10)},
		{"lambda_l2", formatFloat(p.Lambda)},
		{"max_bin", strconv.Itoa(p.MaxBins)},
	}
	if p.Loss == Quantile {
		kv = append(kv, [2]string{"alpha", formatFloat(p.Alpha)})
	}
	w.WriteString("parameters:\n")
	for _, e := range kv {
		fmt.Fprintf(w, "[%s: %s]\n", e[0], e[1])
	}
	w.WriteString("end of parameters\n\n")
}

// formatFloat writes the shortest decimal that parses back to exactly v, so
// leaves reads the same thresholds and leaf values Model.Predict uses.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = formatFloat(x)
	}
	return strings.Join(s, " ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}
