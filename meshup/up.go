package meshup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/controllerd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/safego"
)

// ControllerLogFile, in the data directory, gets the controller's log
// under Once (appended), which keeps the terminal for the result.
const ControllerLogFile = "controller.log"

// OnceTimeout bounds how long Up under Once waits for every node's report
// after its push.
const OnceTimeout = 60 * time.Second

// UpConfig is what Up runs: `mesh up` as the controller.
type UpConfig struct {
	// Controller is the controller's configuration (controllerd.Run); its Data
	// is up's data directory, its Store the store set up. Up sets its
	// Logger and Ready.
	Controller controllerd.Config
	// SetUp says to set up File and Modules on the store before the
	// controller opens it, and to start File's agents.
	SetUp   bool
	File    File
	Modules []commands.DefineModule
	// MeshPath is the mesh file's path, named in what Up says.
	MeshPath string
	// Check, if set, checks the set-up before the store is opened (mesh
	// up: against an empty mesh when the bolt store does not exist yet);
	// a refusal is Refused's.
	Check func(ctx context.Context, cs []commands.Command) error
	// Clock stamps the set-up; Actor executes it and the pushes of Once.
	Clock func() time.Time
	Actor string
	// Once: push every node, wait for each node's report (OnceTimeout),
	// then stop the agents and the controller.
	Once bool
	// TLSCA is the PEM file of the CA the API's certificate is checked
	// against under Once; "" for the system's.
	TLSCA string
	// Ready is called once the controller serves and DATA/bus-urls names
	// its bus, before the agents start; its error stops up.
	Ready func(controllerd.Ready) error
	// Out is told what is done (builds, set-up, runtimes, agents); Log
	// gets the controller's log, but under Once DATA/controller.log does.
	Out, Log io.Writer
}

// UpResult is what Up did, for the caller to say.
type UpResult struct {
	// DataID is the data directory's id ("" without a set-up).
	DataID string
	// Runtimes is the runtime each node of the file ran on.
	Runtimes map[string]string
	// Converged says Once pushed every node and waited: Status is the
	// last status read, Missing the nodes with no report recorded.
	Converged bool
	Status    api.StatusResponse
	Missing   []string
}

// Up runs `mesh up` as the controller (controllerd.Run) until ctx ends, or
// under Once for one pass. With SetUp it first sets up what File and
// Modules name, on the store before the controller opens it: one
// ExecuteAll (Execute), so a refused command writes none and work already
// done appends nothing (the API has no request for a mixed batch, and the
// set-up must be all or nothing). The controller then serves that store,
// and Up starts one agent process per node of the file (StartAgents), the
// builds put into the artifact store first when a node on this machine's
// engine holds it. Under Once it pushes every node and waits for each
// node's report (Converge), then stops the agents and the controller.
func Up(ctx context.Context, cfg UpConfig) (UpResult, error) {
	var res UpResult
	data := cfg.Controller.Data
	mf := cfg.File
	var builds []Build
	if cfg.SetUp {
		id, saveID, err := DataID(data)
		if err != nil {
			return res, err
		}
		if builds, err = BuildImages(ctx, mf, id, cfg.Out); err != nil {
			return res, err
		}
		if err := setUpStore(ctx, cfg, SetUp(cfg.Modules, mf, RecordBuilds(builds))); err != nil {
			return res, err
		}
		if res.DataID, err = saveID(); err != nil { // the set-up made the directory
			return res, err
		}
	} else {
		mf = File{}
	}
	res.Runtimes = Runtimes(ctx, mf, cfg.Out)
	storeNode, storeAt, err := StoreServed(mf, res.Runtimes)
	if err != nil {
		return res, err
	}
	if storeAt != "" {
		if err := StoreFree(storeAt); err != nil {
			return res, err
		}
	}

	ccfg := cfg.Controller
	ccfg.Logger = slog.New(slog.NewTextHandler(cfg.Log, nil))
	if cfg.Once {
		f, err := os.OpenFile(filepath.Join(data, ControllerLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return res, err
		}
		defer f.Close()
		ccfg.Logger = slog.New(slog.NewTextHandler(f, nil))
	}
	ready := make(chan controllerd.Ready, 1)
	ccfg.Ready = func(r controllerd.Ready) { ready <- r }
	ctlCtx, stopCtl := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCtl()
	done := make(chan error, 1)
	go func() {
		done <- safego.Call("up.controller", ccfg.Logger, func() error { return controllerd.Run(ctlCtx, ccfg) })
	}()
	var r controllerd.Ready
	select {
	case r = <-ready:
	case err := <-done:
		return res, err
	case <-ctx.Done():
		stopCtl()
		return res, <-done
	}
	if err := controllerd.WriteBusURLs(data, r.AgentBusURLs); err != nil {
		stopCtl()
		return res, errors.Join(err, <-done)
	}
	if cfg.Ready != nil {
		if err := cfg.Ready(r); err != nil {
			stopCtl()
			return res, errors.Join(err, <-done)
		}
	}

	if storeAt != "" {
		if err := StageBuilds(ctx, filepath.Join(data, AgentsDir, storeNode, ArtifactsDir), builds); err != nil {
			stopCtl()
			return res, errors.Join(err, <-done)
		}
	}
	agents, err := StartAgents(AgentsConfig{
		Data: data, DataID: res.DataID, File: mf, Runtimes: res.Runtimes,
		StoreNode: storeNode, StoreAt: storeAt, Out: cfg.Out,
		Register: func(node, creds string) error { return controllerd.RegisterCreds(data, node, creds, r.BusURLs, nil) },
	})
	stop := func() error {
		aerr := agents.Stop()
		stopCtl()
		return errors.Join(aerr, <-done)
	}
	if err != nil {
		return res, errors.Join(err, stop())
	}
	if storeAt != "" {
		if err := PushBuilds(ctx, storeAt, builds, cfg.Out); err != nil {
			return res, errors.Join(err, stop())
		}
	}
	if !cfg.Once {
		select {
		case <-ctx.Done():
		case err := <-done:
			done <- err
		}
		return res, stop()
	}
	perr := onePass(ctx, cfg, r, mf, &res)
	return res, errors.Join(perr, stop())
}

// setUpStore executes the set-up cs on the store cfg.Controller names,
// all or nothing, and says what it did.
func setUpStore(ctx context.Context, cfg UpConfig, cs []commands.Command) error {
	if cfg.Check != nil {
		if err := cfg.Check(ctx, cs); err != nil {
			return Refused(err)
		}
	}
	store, err := storeurl.Open(ctx, cfg.Controller.Store, storeurl.Options{Data: cfg.Controller.Data, Create: true})
	if errors.Is(err, boltstore.ErrLocked) {
		return fmt.Errorf("set-up: %w: %w", controllerd.ErrStoreHeld, err)
	} else if err != nil {
		return err
	}
	defer store.Close()
	ctl, err := controller.New(controller.Config{Store: store, Clock: cfg.Clock})
	if err != nil {
		return err
	}
	done, err := Execute(ctx, ctl.Handler(), cfg.Actor, cs)
	if err != nil {
		return err
	}
	if done > 0 {
		fmt.Fprintf(cfg.Out, "set-up: %d of %d command(s) found their work already done, nothing to do\n", done, len(cs))
	}
	fmt.Fprintf(cfg.Out, "defined %d module(s); %d node(s) in %s\n", len(cfg.Modules), len(cfg.File.Nodes), cfg.MeshPath)
	return store.Close()
}

// onePass is Once: push every node of mf through the controller's API and
// wait until each node's report of the declaration pushed is recorded, or
// OnceTimeout (Converge); res gets the outcome.
func onePass(ctx context.Context, cfg UpConfig, r controllerd.Ready, mf File, res *UpResult) error {
	var opts []httpapi.ClientOption
	if cfg.TLSCA != "" {
		pem, err := os.ReadFile(cfg.TLSCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		opts = append(opts, httpapi.WithCA(pem))
	}
	c, err := httpapi.NewClient(r.APIURL, r.Token, opts...)
	if err != nil {
		return err
	}
	st, missing, err := Converge(ctx, c, cfg.Actor, mf.NodeNames(), OnceTimeout, cfg.Out)
	if err != nil {
		return err
	}
	res.Converged, res.Status, res.Missing = true, st, missing
	return nil
}

// StoreServed is where the agent of the node holding mf's artifact store
// serves it, when that node runs on this machine's engine (rts): where
// that node's own declaration reaches it (commands.ArtifactStoreAddress:
// its private address, else loopback). "" when no such node: a simulated
// node serves nothing.
func StoreServed(mf File, rts map[string]string) (node, addr string, err error) {
	for _, n := range mf.Nodes {
		if n.ArtifactStore == 0 || rts[n.Name] != RuntimeDocker {
			continue
		}
		held := commands.Node{Name: n.Name, Settings: map[string]string{
			events.SettingPrivateAddress: n.PrivateAddress,
			events.SettingArtifactStore:  strconv.Itoa(n.ArtifactStore),
		}}
		addr, err := commands.ArtifactStoreAddress(held, n.Name)
		if err != nil {
			return "", "", fmt.Errorf("node %s: %w", n.Name, err)
		}
		return n.Name, addr, nil
	}
	return "", "", nil
}

// StoreFree checks that nothing listens on addr yet, so that an agent that
// could not serve the artifact store there fails up at once, not after
// the artifact store's wait.
func StoreFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the artifact store's address %s: %w (another mesh up running? change the node's artifact-store port in the mesh file)", addr, err)
	}
	return ln.Close()
}
