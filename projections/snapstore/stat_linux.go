package snapstore

import (
	"os"
	"syscall"
)

// changeOf is fi's inode change time (Unix nanoseconds) and inode number.
func changeOf(fi os.FileInfo) (int64, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ctim.Nano(), st.Ino
}
