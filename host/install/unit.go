package install

import (
	"fmt"
	"strings"

	"meshplane/agent/agentd"
)

// Unit renders the systemd unit that runs c's agent for node (see the
// package comment; testdata/mesh-agent.service is one).
func Unit(c Config, node string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	after := "network-online.target"
	if c.Runtime == "" || c.Runtime == agentd.RuntimeDocker {
		after += " docker.service"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# %s: the meshplane agent of node %s, written by 'mesh agent
# install' (run again, it rewrites this file only when it would change);
# 'mesh agent uninstall' removes it. To give the agent more flags, add a
# drop-in ('systemctl edit %s') rather than editing this file.
[Unit]
Description=meshplane agent (node %s)
Wants=%s
After=%s
StartLimitIntervalSec=0

[Service]
Type=exec
ExecStart=%s
Restart=always
RestartSec=5s
# The agent runs as root: the Docker socket is root on the host whoever
# holds it, and the agent writes its modules' directories and files
# wherever they are declared (but /usr and /boot). The rest it does not
# use, so it does not have it.
NoNewPrivileges=yes
CapabilityBoundingSet=CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_NET_BIND_SERVICE
ProtectSystem=true
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK

[Install]
WantedBy=multi-user.target
`, UnitFile, oneLine(node), Service, unitEscape(oneLine(node)), after, after, execLine(Command(c)))
	return b.String(), nil
}

// oneLine keeps a name on its line of the unit.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// unitEscape doubles what systemd expands in a setting: its specifiers
// (%n) and, in a command line, variables ($X).
func unitEscape(s string) string {
	return strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
}

// execLine is args as an ExecStart= value: each word bare when it can be,
// else double-quoted with " and \ escaped (systemd.syntax(7)), and
// specifiers and variables escaped in both. Config.check refused control
// characters.
func execLine(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsFunc(a, unsafeInUnit) {
			words[i] = unitEscape(a)
			continue
		}
		var q strings.Builder
		q.WriteByte('"')
		for _, r := range a {
			if r == '"' || r == '\\' {
				q.WriteByte('\\')
			}
			q.WriteRune(r)
		}
		q.WriteByte('"')
		words[i] = unitEscape(q.String())
	}
	return strings.Join(words, " ")
}

func unsafeInUnit(r rune) bool {
	return r <= ' ' || r == 0x7f || strings.ContainsRune(`"'\;`, r)
}

// unitData is the --data value of a unit's ExecStart= as execLine writes
// it; "" when there is none.
func unitData(unit string) string {
	for _, line := range strings.Split(unit, "\n") {
		v, ok := strings.CutPrefix(line, "ExecStart=")
		if !ok {
			continue
		}
		words := splitExec(v)
		for i, w := range words {
			if w == "--data" && i+1 < len(words) {
				return words[i+1]
			}
		}
	}
	return ""
}

// splitExec undoes execLine (it reads only what execLine writes).
func splitExec(s string) []string {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case (r == '%' || r == '$') && i+1 < len(rs) && rs[i+1] == r:
			w.WriteRune(r)
			i++
			in = true
		case quoted && r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
		case r == '"':
			quoted = !quoted
			in = true
		case r == ' ' && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// ShellQuote is args as a POSIX shell command line: each word bare when
// it can be, else in single quotes.
func ShellQuote(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) {
			words[i] = a
			continue
		}
		words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}
