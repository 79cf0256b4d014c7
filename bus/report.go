package bus

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/wire"
)

// ErrBadReport means a message on a report subject is not a report the
// controller can take: it is too large, it does not decode, or it is for
// another node than the subject it came on. Such a message is refused,
// never retried. The concrete error of DecodeReport is a *BadReportError.
var ErrBadReport = errors.New("bus: bad report")

// BadReportError says why a message is not a report: the reason (one of
// events.Refused*: too-large, malformed, wrong-node) and a sentence.
type BadReportError struct {
	Reason string
	Msg    string
}

func (e *BadReportError) Error() string { return ErrBadReport.Error() + ": " + e.Msg }

// Is makes errors.Is(err, ErrBadReport) true.
func (e *BadReportError) Is(target error) bool { return target == ErrBadReport }

func badReport(reason, format string, args ...any) error {
	return &BadReportError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf is the refusal reason (events.Refused*) err names: a
// *BadReportError's, a RejectFor's, or any error's in its chain with a
// RefusalReason method (commands.Refusal); "" when none does.
func ReasonOf(err error) string {
	var b *BadReportError
	if errors.As(err, &b) {
		return b.Reason
	}
	var r interface{ RefusalReason() string }
	if errors.As(err, &r) {
		return r.RefusalReason()
	}
	return ""
}

// reportVersion is the version of the report wire format written here.
const reportVersion = 1

var reportType = reflect.TypeFor[Report]()

// MaxReportSize is the most bytes a report message may have: what the event
// store takes of one event's payload (events.MaxDataSize), since the
// report's outcome becomes the apply.reported event. The controller refuses
// a larger one before decoding it (too-large, recorded as report.refused);
// the reports stream refuses at publish one larger than twice this
// (maxReportMsg), so that a node cannot fill the stream with a few.
const MaxReportSize = events.MaxDataSize

// Digest is the digest a refusal records of a message's bytes:
// "sha256:<hex>".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Report is one apply's outcome as it travels from an agent to the
// controller, on subject mesh.report.<node>, with ApplyID as the message's
// Nats-Msg-Id (so the stream drops a re-sent copy).
//
// Its JSON is a wire format (fields may be added, never renamed):
//
//	{
//	  "version": 1,
//	  "node": "node-1",                  the node that applied; equals the subject's
//	  "apply_id": "0190...",             the id of the apply.reported event (UUID)
//	  "applied_at": "2026-...Z",         when the apply finished, by the agent's clock
//	  "correlation": "...",              the push's correlation (optional)
//	  "attempts": 0,                     failed delivery attempts before this one
//	  "last_error": "...",               the last of them (optional)
//	  "outcome": {apply.reported payload, its "node" equal to "node"},
//	  "workload": {"changes": [container state changes]}   (optional, wire.Workload)
//	}
//
// It carries what commands.Delivery holds; the controller's wiring turns one
// into the other.
//
// What the controller takes (bus.DecodeReport, then the report door,
// commands.CheckReport and Handler.RecordApply); anything else is refused
// for good and recorded as report.refused with its reason:
//
//   - the message: at most MaxReportSize bytes (too-large); one JSON object
//     with no key given twice, at any depth, and none in another case than
//     its field's (malformed);
//   - names, each at most events.MaxReportName (256) bytes of UTF-8 with no
//     NUL (too-large beyond): every resource name (created, removed,
//     replaced, updated, held, failed), a held resource's module, a changed
//     field's name, the declaration, the digest, the apply id and
//     held_since; correlation at most events.MaxNameSize (512);
//   - messages, at most events.MaxReportMessage (4 KiB) each (too-large
//     beyond): a failure's error, a hold's reason; last_error is kept cut
//     to 1 KiB;
//   - counts: none below zero or above events.MaxReportCount; applied equal
//     to unchanged plus created, replaced and updated; sent equal to the
//     number of resources of the declaration named, and no count larger
//     (bad-counts);
//   - resources: created, replaced, updated and held only those of the
//     declaration named; removed only one some declaration of the node had
//     (failed: either, or the hosts file) (bad-counts);
//   - held_since: the apply id of an earlier report of the node that
//     carried a held list (malformed);
//   - workload changes: at most wire.MaxWorkloadChanges, each of the
//     node, of the declaration the report names and of one of its
//     containers, in a state of the list, with its bounds
//     (events.ContainerChange.Check) (malformed; bad-counts for a
//     container the declaration does not have);
//   - the declaration composed for the node and pushed to it
//     (unknown-declaration), the apply time within events.MaxReportSkew
//     (bad-time), the apply id new or the same report again, whatever its
//     age (apply-id-conflict).
type Report struct {
	Version     int                  `json:"version"`
	Node        string               `json:"node"`
	ApplyID     uuid.UUID            `json:"apply_id"`
	AppliedAt   time.Time            `json:"applied_at"`
	Correlation string               `json:"correlation,omitempty"`
	Attempts    int                  `json:"attempts"`
	LastError   string               `json:"last_error,omitempty"`
	Outcome     events.ApplyReported `json:"outcome"`
	// Workload is what the pass saw change in how the node's containers
	// run (wire.Workload), absent when nothing did.
	Workload *wire.Workload `json:"workload,omitempty"`

	// Size and Digest are those of the message the report came in, filled
	// by DecodeReport (never on the wire): what the controller records of
	// a report it refuses (events.ReportRefused).
	Size   int    `json:"-"`
	Digest string `json:"-"`
}

// EncodeReport returns r's wire form, with the current version.
func EncodeReport(r Report) ([]byte, error) {
	r.Version = reportVersion
	if err := r.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("bus: encode report %s: %w", r.ApplyID, err)
	}
	return b, nil
}

// DecodeReport decodes a report that came on subject, and checks it: at
// most MaxReportSize bytes, a known version, a valid node equal to the
// subject's and to the outcome's, an apply id (equal to the outcome's when
// that names one), an apply time. Every failure is a *BadReportError
// (ErrBadReport) saying what was wrong, with its reason. What the report
// says beyond that is the controller's door to check
// (commands.Handler.RecordApply).
func DecodeReport(subject string, data []byte) (Report, error) {
	node, ok := strings.CutPrefix(subject, ReportSubjectPrefix)
	if !ok {
		return Report{}, badReport(events.RefusedMalformed, "subject %q is not a report subject", subject)
	}
	if len(data) > MaxReportSize {
		return Report{}, badReport(events.RefusedTooLarge, "on %s: %d bytes, over the limit of %d", subject, len(data), MaxReportSize)
	}
	// Strictly: a key given twice, or in another case than its field's,
	// would mean one thing to this decoder and another to the next
	// (events.CheckKeys, as the API and import decode). A key no field has
	// is let by: the wire format may gain fields.
	if err := events.CheckKeys(data, reportType, true); err != nil {
		return Report{}, badReport(events.RefusedMalformed, "on %s: %v", subject, err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, badReport(events.RefusedMalformed, "on %s: %v", subject, err)
	}
	if r.Version != reportVersion {
		return Report{}, badReport(events.RefusedMalformed, "on %s: version %d, want %d", subject, r.Version, reportVersion)
	}
	if r.Node != node {
		return Report{}, badReport(events.RefusedWrongNode, "on %s: the report is node %s's", subject, quote(r.Node))
	}
	if err := r.check(); err != nil {
		var b *BadReportError
		if errors.As(err, &b) {
			return Report{}, badReport(b.Reason, "%s (on %s)", b.Msg, subject)
		}
		return Report{}, badReport(events.RefusedMalformed, "%v (on %s)", err, subject)
	}
	r.Size, r.Digest = len(data), Digest(data)
	return r, nil
}

// quote quotes a name from a message, cut to a readable length.
func quote(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// check says what is wrong with r.
func (r Report) check() error {
	switch {
	case r.Version != reportVersion:
		return badReport(events.RefusedMalformed, "version %d, want %d", r.Version, reportVersion)
	case r.ApplyID == uuid.Nil:
		return badReport(events.RefusedMalformed, "no apply id")
	case r.AppliedAt.IsZero():
		return badReport(events.RefusedMalformed, "apply %s: no applied_at", r.ApplyID)
	case r.Outcome.Node != r.Node:
		return badReport(events.RefusedWrongNode, "apply %s: the outcome is node %s's, the report %s's", r.ApplyID, quote(r.Outcome.Node), quote(r.Node))
	case r.Outcome.ApplyID != "" && r.Outcome.ApplyID != r.ApplyID.String():
		return badReport(events.RefusedMalformed, "apply %s: the outcome names apply %s", r.ApplyID, quote(r.Outcome.ApplyID))
	case r.Attempts < 0:
		return badReport(events.RefusedMalformed, "apply %s: %d attempts", r.ApplyID, r.Attempts)
	}
	if err := ValidNode(r.Node); err != nil {
		return badReport(events.RefusedMalformed, "%v", err)
	}
	if err := r.Workload.Check(r.Node); err != nil {
		return badReport(events.RefusedMalformed, "apply %s: %v", r.ApplyID, err)
	}
	return nil
}
