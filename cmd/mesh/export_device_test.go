package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExportToDevice: `mesh export -f` onto a character device (the null
// device's numbers, made by mknod in a temp dir) writes through it and
// leaves it a device; onto a symbolic link it is refused naming the link,
// which is left as it was. Before, the atomic write renamed a regular file
// of mode 0600 over the device (as it did over the machine's /dev/null).
func TestExportToDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("mknod needs root, and CI runs as root")
		}
		t.Skip("SKIPPED: mknod of a character device needs root")
	}
	dir := upExample(t)
	devDir := t.TempDir()
	dev := filepath.Join(devDir, "null")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod: %v", err)
	}
	code, out, errOut := mesh(t, "export", "--data", dir, "-f", dev)
	if code != exitOK {
		t.Fatalf("mesh export -f DEVICE: exit %d\n%s%s", code, out, errOut)
	}
	if fi, err := os.Lstat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("after mesh export -f, %s is %v (%v), want the character device it was", dev, fi.Mode(), err)
	}
	link := filepath.Join(devDir, "link")
	target := filepath.Join(devDir, "target")
	if err := os.WriteFile(target, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = mesh(t, "export", "--data", dir, "-f", link)
	if code == exitOK || !strings.Contains(errOut, link) || !strings.Contains(errOut, "symbolic link") {
		t.Fatalf("mesh export -f LINK: exit %d, %q; want it refused naming the link", code, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("after a refused export %s is %v (%v), want the link it was", link, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "kept\n" {
		t.Errorf("the link's target holds %q", b)
	}
}
