package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"meshplane/internal/atomicfile"
)

// BusURLsFile, in a controller's data directory, names the URLs of its
// embedded bus, one a line, as it reported them when it started serving
// (written by `mesh up`). `mesh node register --creds` puts them in the
// credentials it writes unless --bus-url says otherwise.
const BusURLsFile = "bus-urls"

// ReadBusURLs reads DATA/bus-urls; none (nil) if there is no such file.
func ReadBusURLs(data string) ([]string, error) {
	f, err := os.Open(filepath.Join(data, BusURLsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); u != "" {
			urls = append(urls, u)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return urls, nil
}

// WriteBusURLs replaces DATA/bus-urls whole: a `mesh node register` run
// meanwhile reads the old list or the new one, never a part.
func WriteBusURLs(data string, urls []string) error {
	return atomicfile.WriteFile(filepath.Join(data, BusURLsFile), []byte(strings.Join(urls, "\n")+"\n"), 0o644)
}
