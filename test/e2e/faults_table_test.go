package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFaultsTable reads the faults table of docs/operations.md ("## Faults") and checks that
// every row names, in its last column, tests the repository has: a row cannot point at a test
// that was renamed or removed, and every row has one.
func TestFaultsTable(t *testing.T) {
	section := operationsSection(t, "Faults")
	have := repositoryTests(t)
	named := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) != 3 || strings.HasPrefix(cells[0], "---") || strings.TrimSpace(cells[0]) == "Fault" {
			continue
		}
		rows++
		tests := named.FindAllStringSubmatch(cells[2], -1)
		if len(tests) == 0 {
			t.Errorf("the faults row %q names no test", strings.TrimSpace(cells[0]))
		}
		for _, m := range tests {
			if !have[m[1]] {
				t.Errorf("the faults row %q names %s, which no _test.go file of the repository declares", strings.TrimSpace(cells[0]), m[1])
			}
		}
	}
	if rows < 5 {
		t.Errorf("the faults table has %d rows; the parser missed it", rows)
	}
}

// repositoryTests returns the names of the Test functions the repository's Go test files declare.
func repositoryTests(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
	have := map[string]bool{}
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || strings.HasPrefix(d.Name(), ".")) && path != repo:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			have[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return have
}
