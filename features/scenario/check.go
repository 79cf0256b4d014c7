package scenario

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// MaxFeatureLine is the longest line a feature file may hold: the Gherkin
// parser reads lines with a bufio.Scanner, whose limit this is, and panics
// past it. Feature files are checked before they are handed to it.
const MaxFeatureLine = bufio.MaxScanTokenSize

// lineSuffix is godog's FILE:LINE form of a path.
var lineSuffix = regexp.MustCompile(`:\d+$`)

// CheckFeatures checks what the Gherkin parser would panic on: every
// feature file under path (a file, FILE:LINE, or a directory of *.feature
// files, as godog reads them) holds no line longer than MaxFeatureLine.
// A path that does not exist is the os.Stat error.
func CheckFeatures(path string) error {
	st, err := os.Stat(path)
	if err != nil && lineSuffix.MatchString(path) {
		path = lineSuffix.ReplaceAllString(path, "")
		st, err = os.Stat(path)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return checkFeatureLines(path)
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(p) != ".feature" {
			return nil
		}
		return checkFeatureLines(p)
	})
}

// checkFeatureLines reads path a line at a time, never holding more than
// MaxFeatureLine of one, and refuses it at the first line too long.
func checkFeatureLines(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	line, n := 1, 0
	for {
		chunk, isPrefix, err := r.ReadLine()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		n += len(chunk)
		if n >= MaxFeatureLine {
			return fmt.Errorf("%s:%d: a line longer than %d KiB; the Gherkin parser reads no longer line", path, line, MaxFeatureLine>>10)
		}
		if !isPrefix {
			line, n = line+1, 0
		}
	}
}
