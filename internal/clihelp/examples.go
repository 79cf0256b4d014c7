package clihelp

// Every verb of mesh's examples, in one place (cobra's Example: the "Examples:"
// section of mesh VERB --help, and of the generated reference in
// docs/cli). The names are those of the example mesh (examples/local):
// nodes local, novox (adopted) and g14; modules hello, forge, route-proxy
// and searxng.

import "github.com/spf13/cobra"

// Examples maps a verb's name (Name: "node show") to its examples.
// cmd/mesh's TestEveryVerbHasAnExample holds every verb to one, and every
// key to a verb.
var Examples = map[string]string{
	"up": `  # the example mesh, one pass, then exit: what go tool task up runs
  mesh up --once --data .mesh --modules examples/local/modules --mesh examples/local/mesh.yaml

  # a controller only (no mesh file), serving the API and the bus with TLS
  mesh up --data /var/lib/mesh --listen 0.0.0.0:7480 --tls-cert cert.pem --tls-key key.pem`,
	"agent": `  # the agent of a node whose credentials mesh node register --creds wrote
  mesh agent --data /var/lib/mesh-agent --creds novox.creds --runtime docker`,
	"agent join": `  # on the new host: redeem the token, then run the agent
  mesh agent join https://ctl.example:7480 --token MJ1... --data /var/lib/mesh-agent --runtime docker`,
	"agent install": `  # on the new host, as root: join and run the agent as the systemd service mesh-agent
  mesh agent install https://ctl.example:7480 --token MJ1...`,
	"agent uninstall": `  # stop and remove the service, keeping its data directory
  mesh agent uninstall

  # and its data too
  mesh agent uninstall --purge`,
	"status": `  mesh status
  mesh status novox g14 -o json
  mesh status --at 41                  # as the mesh stood at position 41`,
	"info":    `  mesh info --server https://ctl.example:7480 --token-file api-token`,
	"version": `  mesh version`,
	"node list": `  mesh node list
  mesh node list -o json`,
	"node show": `  mesh node show novox`,
	"node register": `  mesh node register n4 n5

  # and write n4's bus credentials for mesh agent --creds
  mesh node register n4 --creds n4.creds`,
	"node adopt": `  mesh node adopt novox`,
	"node set": `  mesh node set novox private-address 10.1.0.3
  mesh node set novox port.store 6852
  mesh node set local artifact-store 7481
  mesh node set novox port.store ""         # clears it`,
	"node remove": `  # release its modules first, then remove it
  mesh node remove g14 --drain`,
	"node join-token": `  mesh node join-token n4 --ttl 30m`,
	"node revoke":     `  mesh node revoke n4`,
	"module list":     `  mesh module list`,
	"module show":     `  mesh module show forge`,
	"module define":   `  mesh module define examples/local/modules/*.yaml`,
	"module remove": `  # release it everywhere first, in the same request
  mesh module remove searxng --release`,
	"assign": `  mesh assign route-proxy novox`,
	"take": `  # novox is adopted: the module's found data is the mesh's to use from now on
  mesh take route-proxy novox`,
	"release": `  mesh release searxng g14`,
	"push": `  mesh push novox
  mesh push                            # every node`,
	"artifact push": `  mesh artifact push forge forge/web forge-web.tar`,
	"deploy": `  mesh deploy forge
  mesh deploy forge --digest sha256:ab12...   # one recorded build: a roll-back too`,
	"plan": `  mesh plan
  mesh plan novox --after "deploy forge"
  mesh plan novox --after "module define forge.yaml"`,
	"timeline": `  mesh timeline --node novox --limit 20
  mesh timeline --module forge --since 2h
  mesh timeline --since 2026-12-01T00:00:00Z
  mesh timeline --type apply --resource ca`,
	"roster": `  mesh roster novox
  mesh roster novox --history
  mesh roster novox --diff novox/3,novox/7`,
	"why": `  # every apply that touched route-proxy's ca container on novox, and the push behind each
  mesh why novox ca`,
	"logs": `  # the last 100 lines of forge's web container on novox
  mesh logs novox forge-web --server https://ctl.example:7480 --token-file api-token

  # the last 20, then every line it writes, until Ctrl-C
  mesh logs novox forge-web -n 20 --follow --server https://ctl.example:7480 --token-file api-token`,
	"churn": `  mesh churn
  mesh churn novox -o json`,
	"revert": `  mesh revert forge --to 41
  mesh revert forge --to 2026-12-01T10:00:00Z`,
	"diff": `  mesh diff --from 41
  mesh diff --from 2026-12-01T10:00:00Z --to 2026-12-01T12:00:00Z`,
	"rebuild": `  mesh rebuild
  mesh rebuild --projection status --projection churn`,
	"export": `  mesh export -f history.jsonl
  mesh export --since 41 > tail.jsonl`,
	"import": `  # into another store, keeping the events' ids: importing twice appends nothing
  mesh import history.jsonl --store postgres://mesh@db.example/mesh`,
	"replay": `  mesh replay history.jsonl
  mesh replay history.jsonl --until 120`,
	"store verify": `  mesh store verify --data .mesh
  mesh store verify --anchor "$(cat head.txt)"
  mesh store verify --agent-data /var/lib/mesh-agent`,
	"store migrate": `  mesh store migrate --store postgres://mesh@db.example/mesh`,
	"store head": `  # keep the head off the host; mesh store verify --anchor checks it later
  mesh store head > head.txt`,
	"scenario run": `  mesh scenario run features/*.feature
  mesh scenario run features/03_holds.feature --store bolt --format progress`,
	"sim": `  mesh sim --nodes 100 --passes 24
  mesh sim --nodes 1000 --faults none --measure`,
	"bus account": `  # the NATS servers' trust and the controller's credentials, for mesh up --nats
  mesh bus account --data /var/lib/mesh`,
	"bus check": `  # the embedded bus of a controller
  mesh bus check --data /var/lib/mesh

  # an external cluster, as mesh up --nats reaches it
  mesh bus check --nats nats://a:4222 --nats-creds DATA/bus-account/controller.creds --nats-account-seed DATA/bus-account/signing.nk`,
	"token": `  mesh token create alice
  mesh token list`,
	"token create": `  mesh token create alice --ttl 720h`,
	"token list":   `  mesh token list`,
	"token revoke": `  mesh token revoke alice`,
	"secret": `  printf %s "$FORGE_DB_PASSWORD" | mesh secret set forge-db
  mesh secret list`,
	"secret set":            `  printf %s "$FORGE_DB_PASSWORD" | mesh secret set forge-db`,
	"secret list":           `  mesh secret list`,
	"completion":            `  mesh completion bash > /etc/bash_completion.d/mesh`,
	"completion bash":       `  source <(mesh completion bash)`,
	"completion zsh":        `  mesh completion zsh > "${fpath[1]}/_mesh"`,
	"completion fish":       `  mesh completion fish > ~/.config/fish/completions/mesh.fish`,
	"completion powershell": `  mesh completion powershell | Out-String | Invoke-Expression`,
	"docs": `  # the repository's reference (go tool task docs runs this)
  mesh docs --dir docs/cli --man docs/man`,
}

// AddExamples gives each verb of root its Examples.
func AddExamples(root *cobra.Command) {
	for _, v := range Verbs(root) {
		if ex, ok := Examples[Name(v)]; ok && v.Example == "" {
			v.Example = ex
		}
	}
}
