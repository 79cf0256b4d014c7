package controllerd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBusURLsReplaced: DATA/bus-urls is replaced whole, readable by others
// (0644), and read back as written; no temporary file is left beside it.
func TestBusURLsReplaced(t *testing.T) {
	data := t.TempDir()
	if urls, err := ReadBusURLs(data); err != nil || urls != nil {
		t.Fatalf("no file: %v, %v; want none", urls, err)
	}
	for _, urls := range [][]string{{"nats://a:4222", "nats://b:4222"}, {"nats://c:4222"}} {
		if err := WriteBusURLs(data, urls); err != nil {
			t.Fatal(err)
		}
		got, err := ReadBusURLs(data)
		if err != nil || !slices.Equal(got, urls) {
			t.Fatalf("read %v, %v; want %v", got, err, urls)
		}
	}
	fi, err := os.Stat(filepath.Join(data, BusURLsFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o644 {
		t.Errorf("mode %#o, want 0644", perm)
	}
	if des, _ := os.ReadDir(data); len(des) != 1 {
		t.Errorf("data holds %d entries, want only %s", len(des), BusURLsFile)
	}
}
