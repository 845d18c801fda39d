package model

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// checkTrees verifies that every tree of a LightGBM text model is a tree: with L leaves it has
// L−1 internal nodes, node 0 is the root, and every other internal node and every leaf is the
// child of exactly one node. leaves trusts these arrays; a cycle among them would make a
// prediction loop forever, which no recover catches.
func checkTrees(text []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBytes)
	tree, leaves := "", 0
	var left, right []int
	flush := func() error {
		if tree == "" {
			return nil
		}
		err := checkTree(leaves, left, right)
		if err != nil {
			err = fmt.Errorf("%s: %w", tree, err)
		}
		tree, leaves, left, right = "", 0, nil, nil
		return err
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, _ := strings.Cut(line, "=")
		var err error
		switch key {
		case "Tree":
			if err := flush(); err != nil {
				return err
			}
			tree = line
		case "num_leaves":
			leaves, err = strconv.Atoi(val)
		case "left_child":
			left, err = ints(val)
		case "right_child":
			right, err = ints(val)
		case "end of trees":
			return flush()
		}
		if err != nil && tree != "" {
			return fmt.Errorf("%s: %s: %w", tree, key, err)
		}
	}
	return flush()
}

func checkTree(leaves int, left, right []int) error {
	if leaves < 1 {
		return fmt.Errorf("num_leaves %d", leaves)
	}
	internal := leaves - 1
	if len(left) != internal || len(right) != internal {
		return fmt.Errorf("%d leaves need %d internal nodes, got %d left and %d right children", leaves, internal, len(left), len(right))
	}
	nodeSeen, leafSeen := make([]bool, internal), make([]bool, leaves)
	for _, c := range append(append([]int(nil), left...), right...) {
		if c < 0 { // leaf ~c
			j := ^c
			if j >= leaves || leafSeen[j] {
				return fmt.Errorf("leaf %d is out of range or the child of two nodes", j)
			}
			leafSeen[j] = true
			continue
		}
		if c == 0 || c >= internal || nodeSeen[c] {
			return fmt.Errorf("node %d is the root, out of range or the child of two nodes", c)
		}
		nodeSeen[c] = true
	}
	return nil
}

func ints(s string) ([]int, error) {
	fields := strings.Fields(s)
	out := make([]int, len(fields))
	for i, f := range fields {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
