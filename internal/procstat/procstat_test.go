package procstat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// writeStat writes a stat file for pid under root with the given command name, state, parent and
// start time (the fields between them filled with zeros).
func writeStat(t *testing.T, root string, pid int, comm string, state byte, ppid int, start uint64) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := strconv.Itoa(pid) + " (" + comm + ") " + string(state) + " " + strconv.Itoa(ppid)
	for range 17 { // fields 5 to 21
		line += " 0"
	}
	line += " " + strconv.FormatUint(start, 10) + " 0 0\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	root := t.TempDir()
	writeStat(t, root, 10, "a (tricky) name", 'S', 1, 4242) // parentheses and spaces in the name
	writeStat(t, root, 11, "zombie", 'Z', 10, 5000)
	writeStat(t, root, 12, "child", 'T', 10, 6000)
	if err := os.MkdirAll(filepath.Join(root, "13"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "13", "stat"), []byte("13 (short) S 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	st, err := Read(root, 10)
	if err != nil || st != (Stat{State: 'S', PPID: 1, Start: 4242}) || st.Ended() {
		t.Errorf("Read(10) = %+v, %v; want S, parent 1, start 4242, not ended", st, err)
	}
	if st, err := Read(root, 11); err != nil || !st.Ended() {
		t.Errorf("Read(11) = %+v, %v; want a zombie, ended", st, err)
	}
	if _, err := Read(root, 99); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read(99): %v, want fs.ErrNotExist", err)
	}
	if _, err := Read(root, 13); err == nil {
		t.Error("Read(13) of a short stat: want an error")
	}
	if got := Children(root, 10); !slices.Equal(got, []int{11, 12}) {
		t.Errorf("Children(10) = %v, want [11 12]", got)
	}
	if got := Children(filepath.Join(root, "nowhere"), 10); len(got) != 0 {
		t.Errorf("Children under a missing root = %v", got)
	}
}

// This process runs; a pid past the kernel's limit does not.
func TestRunning(t *testing.T) {
	if _, err := os.Stat(Root); err != nil {
		t.Skip("no /proc")
	}
	if !Running(os.Getpid()) {
		t.Error("this test's own process is not running")
	}
	if Running(1 << 30) {
		t.Error("pid 2^30 is running")
	}
}
