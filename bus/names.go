package bus

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"

	"meshplane/events"
)

// The names the bus uses. They are part of the wire contract between the
// controller, the agents and any NATS cluster an operator sets up: never
// renamed.
const (
	// DeclarationsBucket is the JetStream KV bucket holding the latest
	// declaration of each node, under the node's name.
	DeclarationsBucket = "mesh-declarations"
	// RosterKey is the key of the mesh's shared roster value in
	// DeclarationsBucket (roster.go): no node is named so, since a node's
	// name starts with a letter or a digit (ValidNode).
	RosterKey = "_roster"
	// ReportsStream is the JetStream stream of apply reports.
	ReportsStream = "MESH_REPORTS"
	// ReportsConsumer is the controller's durable consumer on ReportsStream.
	ReportsConsumer = "controller"
	// ReportSubjectPrefix starts every report subject: mesh.report.<node>.
	ReportSubjectPrefix = "mesh.report."
	// PlanSubjectPrefix starts every dry-run subject: mesh.plan.<node>, on
	// which the node's agent answers the controller's dry-run requests
	// (mesh plan; the wire form is in plan.go).
	PlanSubjectPrefix = "mesh.plan."
	// HeartbeatSubjectPrefix starts every heartbeat subject:
	// mesh.heartbeat.<node>, on which the node's agent says it is alive
	// (core NATS: nothing stored; the wire form is in heartbeat.go).
	HeartbeatSubjectPrefix = "mesh.heartbeat."

	// RepublishSubjectPrefix starts the subject on which the bucket's
	// stream republishes each value it stored: mesh.decl.<key>. An agent
	// takes a core NATS subscription on its own key's and the roster's,
	// never a JetStream consumer (node.go).
	RepublishSubjectPrefix = "mesh.decl."

	// declStream is the stream JetStream keeps DeclarationsBucket in, and
	// declPrefix the subject prefix of its keys.
	declStream = "KV_" + DeclarationsBucket
	declPrefix = "$KV." + DeclarationsBucket + "."

	// nodeInboxRoot and controllerInboxRoot start the reply subjects
	// (inboxes) of node and controller connections: a node may subscribe
	// only under its own, so it never sees another's replies.
	nodeInboxRoot       = "_INBOX.node."
	controllerInboxRoot = "_INBOX.controller"
)

// ErrBadNode means a node name cannot be used on the bus.
var ErrBadNode = errors.New("bus: bad node name")

// ValidNode checks that node is usable as a KV key and in subjects. It is
// the bus's own defence, behind the door: every name the mesh accepts
// (events.CheckName, an RFC 1123 label: lower-case letters, digits and
// '-') is valid here, and so is every name the mesh accepted before that
// rule and may still hold in its history (also '_' and '.', starting with
// a letter or digit, at most 63 bytes), so the bus goes on serving those
// nodes; a '.' at the end or twice in a row (an empty subject token) never
// is.
func ValidNode(node string) error {
	if events.CheckName("node", node) == nil {
		return nil
	}
	if node == "" || len(node) > events.MaxNameLen {
		return fmt.Errorf("%w: %q: 1 to %d bytes", ErrBadNode, node, events.MaxNameLen)
	}
	for i, r := range node {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			return fmt.Errorf("%w: %q: use lower-case letters, digits, '-', '_' and '.', starting with a letter or digit", ErrBadNode, node)
		}
	}
	if strings.HasSuffix(node, ".") || strings.Contains(node, "..") {
		return fmt.Errorf("%w: %q: a '.' at the end or twice in a row", ErrBadNode, node)
	}
	return nil
}

// ReportSubject is the subject node publishes its reports on.
func ReportSubject(node string) string { return ReportSubjectPrefix + node }

// PlanSubject is the subject node's agent answers dry runs on. A node name
// with '.' is several tokens here, but a node may subscribe to exactly its
// own subject, never a wildcard, so node "web" cannot hear "web.a"'s.
func PlanSubject(node string) string { return PlanSubjectPrefix + node }

// HeartbeatSubject is the subject node's agent heartbeats on. A node may
// publish on exactly its own, so the subject names who sent it.
func HeartbeatSubject(node string) string { return HeartbeatSubjectPrefix + node }

// DeclarationSubject is the subject of node's key in DeclarationsBucket.
func DeclarationSubject(node string) string { return declPrefix + node }

// RosterSubject is the subject of RosterKey in DeclarationsBucket.
const RosterSubject = declPrefix + RosterKey

// RepublishSubject is the subject on which the bucket's stream republishes
// each value stored under key (a node's name, or RosterKey), once stored.
func RepublishSubject(key string) string { return RepublishSubjectPrefix + key }

// DeclarationsStream is the stream JetStream keeps DeclarationsBucket in.
const DeclarationsStream = declStream

// NodeInbox is the inbox prefix of node's connections. A node name may hold
// '.', which would make it several subject tokens, and then node "web" could
// subscribe to node "web.a"'s inbox; '.' becomes '~' (which no node name
// holds), so the prefix ends in exactly one token per node.
func NodeInbox(node string) string { return nodeInboxRoot + strings.ReplaceAll(node, ".", "~") }

// NodePermissions are the permissions of node's bus user: exactly what
// reading its own declaration key and the mesh's roster value (RosterKey),
// hearing each new value of both, and publishing its own reports need,
// nothing else. It has no JetStream consumer, so it may create none: one
// node cannot take what another needs, nor make the server deliver
// anything to another node's subjects.
//
// Publish:
//
//	mesh.report.<node>                                                         its reports (the stream acks to its inbox)
//	mesh.heartbeat.<node>                                                      its heartbeats (core NATS, nothing stored)
//	mesh.secret.<node>                                                         requests for its declaration's secrets (secret.go)
//	$JS.API.DIRECT.GET.KV_mesh-declarations.$KV.mesh-declarations.<node>        the latest value of its key
//	$JS.API.DIRECT.GET.KV_mesh-declarations.$KV.mesh-declarations._roster       the latest roster value (never a put of it)
//	the reply subject of a request it received, once, within a minute         its answers to dry runs and log requests (allow_responses)
//
// Subscribe:
//
//	_INBOX.node.<node>.>                                                       its inbox: direct gets' and acks' replies
//	mesh.plan.<node>                                                           dry-run requests for it (mesh plan)
//	mesh.logs.<node>                                                           log requests for it (mesh logs; logs.go)
//	mesh.decl.<node>                                                           each new value of its key, republished by the stream
//	mesh.decl._roster                                                          each new roster value, republished by the stream
//
// Users minted by older builds also hold $JS.API.CONSUMER.CREATE on their
// own key and the roster's, CONSUMER.DELETE, STREAM.INFO and $JS.FC on the
// bucket's stream, and not the two mesh.decl subjects: such a node's agent
// reads its key by direct get alone, polling (Node.Watch), and what it can
// create is bounded by the stream's and the account's consumer limits
// (declMaxConsumers, AccountMaxConsumers), which no agent of this build
// needs.
func NodePermissions(node string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add(
		ReportSubject(node),
		HeartbeatSubject(node),
		SecretSubject(node),
		"$JS.API.DIRECT.GET."+declStream+"."+DeclarationSubject(node),
		"$JS.API.DIRECT.GET."+declStream+"."+RosterSubject,
	)
	p.Sub.Allow.Add(NodeInbox(node)+".>", PlanSubject(node), LogsSubject(node), RepublishSubject(node), RepublishSubject(RosterKey))
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return p
}
