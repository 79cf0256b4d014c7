package controllerd

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"meshplane/internal/atomicfile"
)

// BusURLsFile, in a controller's data directory, names the URLs of its
// embedded bus, one a line, as it reported them when it started serving
// (Ready.AgentBusURLs, written by `mesh up`). `mesh node register --creds`
// puts them in the credentials it writes unless --bus-url says otherwise.
// A bus listening on every address is named at loopback and at each
// address of the machine (see below).
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

// Listening on every address (--listen or --bus-listen 0.0.0.0, ::, or an
// empty host) is said as addresses a client can dial, never as the
// unspecified one (https://[::]:7480 dials nowhere on most systems' other
// hosts and reads as a mistake):
//   - the API's URL (Ready.APIURL, the hint `mesh up` prints, and
//     DATA/controller.json, which the CLI on this machine reads) names
//     loopback, 127.0.0.1: it is for the CLI on this machine; hosts elsewhere
//     are given the advertised URL (--advertise, else the machine's name) in
//     their join tokens;
//   - DATA/bus-urls (Ready.AgentBusURLs) is what `mesh node register --creds`
//     writes into credentials that are carried to agents on this host and
//     others: the bus at loopback first, then at every global unicast
//     address of the machine's interfaces that are up (what nats-server
//     itself advertises to its clients as connect_urls), so that an agent
//     anywhere dials one it reaches. An agent's NATS client tries each
//     until one answers. With TLS the certificate must name the address
//     dialed: --bus-url on `node register` names others.

// unspecifiedHost says whether the host of listen (host:port) is every
// address: empty, 0.0.0.0 or ::.
func unspecifiedHost(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// localURL is scheme://addr with an unspecified host (every address)
// replaced by loopback, 127.0.0.1: what a client on this machine dials.
func localURL(scheme, addr string) string {
	if unspecifiedHost(addr) {
		if _, port, err := net.SplitHostPort(addr); err == nil {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return scheme + "://" + addr
}

// withAddresses is the bus URLs agents are given when the bus listens on
// every address: urls, whose first is the bus's own at loopback, followed
// by that one at each of ips (in their order); urls unchanged when there
// are none.
func withAddresses(urls []string, ips []net.IP) []string {
	if len(urls) == 0 {
		return urls
	}
	own, err := url.Parse(urls[0])
	if err != nil {
		return urls
	}
	out := []string{urls[0]}
	seen := map[string]bool{urls[0]: true}
	for _, ip := range ips {
		u := *own
		u.Host = net.JoinHostPort(ip.String(), own.Port())
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, u := range urls[1:] {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// interfaceIPs are the global unicast addresses of the machine's
// interfaces that are up, IPv4 first; none when they cannot be listed.
func interfaceIPs() []net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var v4, v6 []net.IP
	for _, i := range ifaces {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || !n.IP.IsGlobalUnicast() {
				continue
			}
			if n.IP.To4() != nil {
				v4 = append(v4, n.IP)
			} else {
				v6 = append(v6, n.IP)
			}
		}
	}
	return append(v4, v6...)
}
