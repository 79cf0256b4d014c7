package meshup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"meshplane/agent"
)

// DataIDFile, in a data directory, is its id: 16 hex digits, made by the
// first mesh up that sets a mesh up there and kept. It is the value of
// agent.LabelData on what up makes on an engine (the images it builds; its
// agents' containers, networks and volumes, through --docker-label), so
// that data directories sharing an engine each clean up only their own.
const DataIDFile = "data-id"

// DataID is data's id: the one DATA/data-id keeps, or a new one, which save
// writes there once the data directory is made (a set-up refused on a
// fresh directory leaves nothing behind). save keeps an id written
// meanwhile by another up, and returns it.
func DataID(data string) (id string, save func() (string, error), err error) {
	path := filepath.Join(data, DataIDFile)
	read := func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		id := strings.TrimSpace(string(b))
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%s holds %.40q, not a data directory's id (16 hex digits): remove it and run up again (what carries the old id on an engine is then another data directory's)", path, id)
		}
		return id, nil
	}
	switch id, err := read(); {
	case err == nil:
		return id, func() (string, error) { return id, nil }, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", nil, err
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("data directory id: %w", err)
	}
	id = hex.EncodeToString(b)
	save = func() (string, error) {
		if err := os.MkdirAll(data, 0o755); err != nil {
			return "", fmt.Errorf("data directory id: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return read()
		} else if err != nil {
			return "", fmt.Errorf("data directory id: %w", err)
		}
		_, werr := f.WriteString(id + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("data directory id: %w", werr)
		}
		return id, nil
	}
	return id, save, nil
}

// DockerCleanup is how to see and remove what the nodes on the engine
// made there for the data directory whose id is dataID, and nothing else on
// a shared engine: every container, network and volume carries the node's
// label (agent.LabelNode) and the data directory's (agent.LabelData), every
// image up built the data directory's (docker ANDs the filters).
func DockerCleanup(nodes []string, dataID string) string {
	var s string
	mine := "label=" + agent.LabelData + "=" + dataID
	for _, n := range nodes {
		f := "label=" + agent.LabelNode + "=" + n + " --filter " + mine
		s += fmt.Sprintf("  docker ps --filter %[1]s    (node %[2]s's containers, left running)\n", f, n)
		s += fmt.Sprintf("  docker rm -f $(docker ps -aq --filter %[1]s); docker network prune -f --filter %[1]s    (remove them; its volumes, kept: docker volume ls --filter %[1]s)\n", f)
	}
	s += fmt.Sprintf("  docker image prune -af --filter %s    (then the images up built for this data directory)\n", mine)
	return s
}
