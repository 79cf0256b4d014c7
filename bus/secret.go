package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/declaration"
	"meshplane/internal/safego"
)

// Secrets on the bus: an agent asks for the values of the secrets a
// declaration's containers read, on its own subject mesh.secret.<node>
// (core NATS request/reply, nothing stored), and reads the answer on its
// inbox. Its user may publish on exactly its own subject, so the subject
// says who asks; the controller answers only for the secrets, at the
// digests, that the node's latest declaration in the bucket names, and
// logs every refusal. A standby controller does not answer (ErrNotLeading
// from the resolver): the leader's answer is the one the agent reads.
//
//	request: {"node": "novox", "secrets": [{"secret": "forge-db", "digest": "hmac-sha256:…"}]}
//	answer:  {"values": {"forge-db": "…"}} or {"error": "…"}

// SecretSubjectPrefix starts every secret request subject: mesh.secret.<node>.
const SecretSubjectPrefix = "mesh.secret."

// SecretSubject is the subject node's agent asks for secrets on.
func SecretSubject(node string) string { return SecretSubjectPrefix + node }

// SecretTimeout bounds a secret request made with no deadline of its own:
// no answer by then (no leader, no bus) fails the containers that need it,
// and the next apply asks again.
const SecretTimeout = 10 * time.Second

// maxSecretRequest bounds a secret request's bytes.
const maxSecretRequest = 64 << 10

// Errors of secret requests.
var (
	// ErrSecretRefused: the controller refused to give a secret (not in the
	// node's declaration, another digest, or it could not open it).
	ErrSecretRefused = errors.New("bus: secret refused")
	// ErrNotLeading is what a resolver returns on a standby: no answer is
	// sent.
	ErrNotLeading = errors.New("bus: not the leading controller")
)

// SecretRequest is an agent's request for secret values.
type SecretRequest struct {
	Node    string               `json:"node"`
	Secrets []declaration.Secret `json:"secrets"` // Secret and Digest set
}

// SecretAnswer is the controller's answer: every value asked for, or why not.
type SecretAnswer struct {
	Values map[string]string `json:"values,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// Secrets asks the controller for the values of want (each a secret at
// its digest), over the node's own connection. The values are the
// caller's to keep in memory only.
func (n *Node) Secrets(ctx context.Context, want []declaration.Secret) (map[string]string, error) {
	b, err := json.Marshal(SecretRequest{Node: n.node, Secrets: want})
	if err != nil {
		return nil, fmt.Errorf("bus: secrets of %s: %w", n.node, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, SecretTimeout)
		defer cancel()
	}
	m, err := n.nc.RequestWithContext(ctx, SecretSubject(n.node), b)
	if err != nil {
		return nil, fmt.Errorf("bus: secrets of %s: %w", n.node, err)
	}
	var a SecretAnswer
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return nil, fmt.Errorf("bus: secrets of %s: answer: %w", n.node, err)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("%w: %s", ErrSecretRefused, a.Error)
	}
	for _, s := range want {
		if _, ok := a.Values[s.Secret]; !ok {
			return nil, fmt.Errorf("%w: no value for %s", ErrSecretRefused, s.Secret)
		}
	}
	return a.Values, nil
}

// SecretResolver gives the values of secrets, each at its digest: the
// controller's (it holds the key).
type SecretResolver func(ctx context.Context, want []declaration.Secret) (map[string]string, error)

// SecretService is the controller's subscription answering secret requests.
type SecretService struct {
	c                 *ControllerConn
	sub               *nats.Subscription
	resolve           SecretResolver
	log               *slog.Logger
	slots             chan struct{} // requests answered at once: maxSecretAnswers
	answered, refused atomic.Uint64
	dropped           atomic.Uint64
}

// maxSecretAnswers bounds the requests answered at once; one past it is
// dropped unanswered (its agent's request times out, and its next apply
// asks again), so a node flooding its subject cannot exhaust the controller.
const maxSecretAnswers = 16

// ServeSecrets answers the agents' secret requests on mesh.secret.> with
// resolve, for the secrets the node's latest declaration names only, until
// Stop or the connection closes.
func (c *ControllerConn) ServeSecrets(resolve SecretResolver) (*SecretService, error) {
	s := &SecretService{c: c, resolve: resolve, log: c.log, slots: make(chan struct{}, maxSecretAnswers)}
	sub, err := c.subscribe(SecretSubjectPrefix+">", s.handle)
	if err != nil {
		return nil, fmt.Errorf("bus: serve secrets: %w", err)
	}
	s.sub = sub
	return s, nil
}

// handle is one request, behind a recover: a panic is logged and counted,
// and the request goes unanswered. It runs on the connection's goroutine
// only long enough to start one of its own (the answer reads the bucket).
func (s *SecretService) handle(m *nats.Msg) {
	select {
	case s.slots <- struct{}{}:
	default:
		s.dropped.Add(1)
		return
	}
	go func() {
		defer func() { <-s.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = safego.Call("bus.secret", s.log, func() error { s.answer(ctx, m); return nil })
	}()
}

func (s *SecretService) answer(ctx context.Context, m *nats.Msg) {
	node := strings.TrimPrefix(m.Subject, SecretSubjectPrefix)
	values, err := s.values(ctx, node, m.Data)
	if errors.Is(err, ErrNotLeading) {
		return
	}
	var a SecretAnswer
	if err != nil {
		s.refused.Add(1)
		s.log.Warn("bus: secret request refused", "node", node, "err", err)
		a.Error = err.Error()
	} else {
		s.answered.Add(1)
		a.Values = values
	}
	b, _ := json.Marshal(a)
	if err := m.Respond(b); err != nil {
		s.log.Debug("bus: secret answer not sent", "node", node, "err", err)
	}
}

// values checks a request against the node's latest declaration and
// resolves it.
func (s *SecretService) values(ctx context.Context, node string, b []byte) (map[string]string, error) {
	if err := ValidNode(node); err != nil {
		return nil, err
	}
	if len(b) > maxSecretRequest {
		return nil, fmt.Errorf("a secret request of %d bytes: at most %d", len(b), maxSecretRequest)
	}
	var req SecretRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("secret request: %w", err)
	}
	if req.Node != node {
		return nil, fmt.Errorf("a secret request on %s's subject claims node %q", node, req.Node)
	}
	if len(req.Secrets) == 0 {
		return nil, errors.New("a secret request names no secret")
	}
	d, _, err := s.c.Declaration(ctx, node)
	if err != nil {
		return nil, err
	}
	named := map[string]string{}
	for _, x := range d.Secrets() {
		named[x.Secret] = x.Digest
	}
	for _, x := range req.Secrets {
		digest, ok := named[x.Secret]
		if !ok {
			return nil, fmt.Errorf("secret %s is not in %s's declaration %s", x.Secret, node, d.ID)
		}
		if digest != x.Digest {
			return nil, fmt.Errorf("secret %s: %s's declaration %s names digest %s, not %s", x.Secret, node, d.ID, digest, x.Digest)
		}
	}
	return s.resolve(ctx, req.Secrets)
}

// SecretStats counts the answers, refusals and dropped requests of a
// SecretService.
type SecretStats struct{ Answered, Refused, Dropped uint64 }

// Stats says what the service answered and refused.
func (s *SecretService) Stats() SecretStats {
	return SecretStats{Answered: s.answered.Load(), Refused: s.refused.Load(), Dropped: s.dropped.Load()}
}

// Stop ends the subscription.
func (s *SecretService) Stop() {
	if err := s.sub.Unsubscribe(); err != nil {
		s.log.Debug("bus: unsubscribe secrets", "err", err)
	}
}
