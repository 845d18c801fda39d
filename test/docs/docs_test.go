// Package docs checks that the documentation says what the tree holds: the README's Layout names
// paths that exist and its Development table make targets the Makefile has, and every relative
// link of every Markdown file reaches a file, and a heading where it names one.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, two levels up from this package.
const root = "../.."

// skipDirs are the folders that hold no documentation of the project's own: build outputs,
// installed tools and packages.
var skipDirs = map[string]bool{".git": true, "bin": true, ".tools": true, "node_modules": true}

var (
	fence      = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	makeTarget = regexp.MustCompile("^\\|\\s*`make ([a-z-]+)`")
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the lines of README.md's section titled title, up to the next "## ".
func section(t *testing.T, readme, title string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return strings.Split(rest, "\n")
}

// TestReadmeLayout checks that every path the README's Layout block names exists. A line names
// one or more paths, comma-separated, before its description; a path with <…> is a pattern.
func TestReadmeLayout(t *testing.T) {
	lines := section(t, read(t, "README.md"), "Layout")
	inBlock, named := false, 0
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock || strings.TrimSpace(line) == "" {
			continue
		}
		paths, _, _ := strings.Cut(line, "  ")
		for p := range strings.SplitSeq(paths, ",") {
			p = strings.TrimSpace(p)
			if p == "" || strings.Contains(p, "<") {
				continue
			}
			named++
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("README.md's Layout names %s, which does not exist", p)
			}
		}
	}
	if named < 20 {
		t.Errorf("README.md's Layout names %d paths; the check expects its code block of paths", named)
	}
}

// TestReadmeMakeTargets checks that every target the README's Development table names is a
// target of the Makefile.
func TestReadmeMakeTargets(t *testing.T) {
	makefile := read(t, "Makefile")
	n := 0
	for _, line := range section(t, read(t, "README.md"), "Development") {
		m := makeTarget.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).MatchString(makefile) {
			t.Errorf("README.md's Development table names make %s, which the Makefile lacks", m[1])
		}
	}
	if n < 5 {
		t.Errorf("README.md's Development table names %d make targets; the check expects its table", n)
	}
}

// TestMarkdownLinks checks every relative link of every Markdown file of the repository: the file
// it names exists, and a #fragment into a Markdown file (or the same one) is one of its headings.
func TestMarkdownLinks(t *testing.T) {
	files := markdownFiles(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchors[path] = a
		return a
	}
	links := 0
	for _, f := range files {
		text := inlineCode.ReplaceAllString(fence.ReplaceAllString(read(t, f), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			resolved := f
			if path != "" {
				resolved = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(filepath.Join(root, resolved)); err != nil {
					t.Errorf("%s links to %s, which does not exist", f, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(resolved, ".md") && !anchorsOf(resolved)[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", f, target, resolved, frag)
			}
		}
	}
	if links < 100 {
		t.Errorf("checked %d relative links in %d files; expected the repository's hundreds", links, len(files))
	}
}

// markdownFiles lists the repository's Markdown files, relative to its root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of the Markdown file at path
// (outside code blocks): a repeated heading's later ones get -1, -2 ….
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(read(t, path)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inBlock || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, spaces as hyphens, and only letters, digits,
// hyphens and underscores kept.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
