//go:build !linux

package snapstore

import "os"

// changeOf is fi's inode change time and inode number: not read here (the
// stamp is the size, the modification time and bbolt's transaction).
func changeOf(os.FileInfo) (int64, uint64) { return 0, 0 }
