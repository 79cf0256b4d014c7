package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/controllerd"
	"meshplane/internal/usage"
)

// WriteNodeCreds writes node's bus credential file, for operator: asked of
// the controller when s is remote (urls, if any, replace the bus URLs it
// names), else minted from the trust root in the data directory data
// (naming urls, else those of DATA/bus-urls); either way recorded
// (node.credentials-issued).
func (s *Session) WriteNodeCreds(ctx context.Context, data, operator, node, file string, urls []string) error {
	if s.Remote() {
		a, ok := s.Service.(api.Access)
		if !ok {
			return errors.New("this client mints no credentials")
		}
		res, err := a.NodeCreds(ctx, api.NodeRequest{Operator: operator, Node: node})
		if err != nil {
			return err
		}
		c := res.Creds
		if len(urls) > 0 {
			c.URLs = urls // the servers this host dials; the user is the same
		}
		return bus.WriteCreds(file, bus.Creds{Version: c.Version, Node: c.Node, URLs: c.URLs, JWT: c.JWT, Seed: c.Seed, CA: c.CA})
	}
	if len(urls) == 0 {
		var err error
		if urls, err = controllerd.ReadBusURLs(data); err != nil {
			return err
		}
	}
	pub, err := controllerd.MintCreds(data, node, file, urls, nil)
	if err != nil {
		return err
	}
	by := "operator:" + operator
	_, err = s.Local.Handler().Execute(ctx, by, commands.RecordCredentials{Node: node, PublicKey: pub, By: by})
	return err
}

// Revoke revokes, for operator, every bus user of node its history knows,
// and the users of keys and of the credentials files creds, recorded as
// node's first (a file of another node is bad usage, usage.Err).
func (s *Session) Revoke(ctx context.Context, operator, node string, keys, creds []string) (api.RevokeResponse, error) {
	a, ok := s.Service.(api.Access)
	if !ok {
		return api.RevokeResponse{}, errors.New("this client revokes nothing")
	}
	req := api.RevokeRequest{Operator: operator, Node: node, PublicKeys: keys}
	for _, f := range creds {
		of, pub, err := bus.CredsUser(f)
		if err != nil {
			return api.RevokeResponse{}, err
		}
		if of != node {
			return api.RevokeResponse{}, usage.Errorf("--creds %s is node %s's, not %s's", f, of, node)
		}
		req.PublicKeys = append(req.PublicKeys, pub)
	}
	return a.Revoke(ctx, req)
}

// CheckMintable refuses, before anything is written, credentials for node
// that t cannot mint: a name the registration refuses, or, on a local
// store, a data directory with no bus trust root (never made here).
func CheckMintable(t Target, node string) error {
	if _, err := commands.Decide(commands.State{}, commands.RegisterNode{Node: node}); err != nil {
		return err
	}
	if t.Server != "" {
		return nil
	}
	if _, err := bus.OpenAuthority(filepath.Join(t.Data, controllerd.BusDir)); err != nil {
		return fmt.Errorf("%w; on another machine than the controller's, use --server URL (or 'mesh node join-token %s')", err, node)
	}
	return nil
}
