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

// NodeInbox is the inbox prefix of node's connections. A node name may hold
// '.', which would make it several subject tokens, and then node "web" could
// subscribe to node "web.a"'s inbox; '.' becomes '~' (which no node name
// holds), so the prefix ends in exactly one token per node.
func NodeInbox(node string) string { return nodeInboxRoot + strings.ReplaceAll(node, ".", "~") }

// NodePermissions are the permissions of node's bus user: exactly what
// watching and reading its own declaration key and the mesh's roster value
// (RosterKey) and publishing its own reports need, nothing else.
//
// Publish:
//
//	mesh.report.<node>                                                         its reports (the stream acks to its inbox)
//	mesh.heartbeat.<node>                                                      its heartbeats (core NATS, nothing stored)
//	mesh.secret.<node>                                                         requests for its declaration's secrets (secret.go)
//	$JS.API.CONSUMER.CREATE.KV_mesh-declarations.*.$KV.mesh-declarations.<node> a consumer (any name) whose filter is its key:
//	                                                                           the server refuses a config whose filter differs
//	                                                                           from the one in the subject
//	$JS.API.DIRECT.GET.KV_mesh-declarations.$KV.mesh-declarations.<node>        the latest value of its key
//	$JS.API.CONSUMER.CREATE.KV_mesh-declarations.*.$KV.mesh-declarations._roster a consumer whose filter is the roster's key
//	$JS.API.DIRECT.GET.KV_mesh-declarations.$KV.mesh-declarations._roster       the latest roster value (never a put of it)
//	$JS.API.CONSUMER.DELETE.KV_mesh-declarations.*                              removing its watch's consumer when the watch stops
//	$JS.API.STREAM.INFO.KV_mesh-declarations                                    binding to the bucket (see below)
//	$JS.FC.KV_mesh-declarations.>                                               flow-control replies of its watch
//	the reply subject of a request it received, once, within a minute         its answers to dry runs (allow_responses)
//
// Subscribe:
//
//	_INBOX.node.<node>.>                                                       its inbox: API replies, acks, watch deliveries
//	mesh.plan.<node>                                                           dry-run requests for it (mesh plan)
//
// What a node can learn beyond its own key: the bucket's configuration and
// state through STREAM.INFO (message counts and, when asked, the keys, that
// is the node names; never a value). Every declaration already names the
// other nodes in its roster, and so does the roster value every node reads,
// so this tells a node nothing new. It may delete
// a consumer of the bucket's stream by name (the client removes its watch's
// consumer on stop, and waits 5 s for the answer when refused); another
// node's watch consumer has a random name that it cannot list, and deleting
// one would only make that watch start again. It cannot list consumers,
// touch the reports stream's, or read any other subject.
func NodePermissions(node string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add(
		ReportSubject(node),
		HeartbeatSubject(node),
		SecretSubject(node),
		"$JS.API.CONSUMER.CREATE."+declStream+".*."+DeclarationSubject(node),
		"$JS.API.DIRECT.GET."+declStream+"."+DeclarationSubject(node),
		"$JS.API.CONSUMER.CREATE."+declStream+".*."+RosterSubject,
		"$JS.API.DIRECT.GET."+declStream+"."+RosterSubject,
		"$JS.API.CONSUMER.DELETE."+declStream+".*",
		"$JS.API.STREAM.INFO."+declStream,
		"$JS.FC."+declStream+".>",
	)
	p.Sub.Allow.Add(NodeInbox(node)+".>", PlanSubject(node))
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return p
}
