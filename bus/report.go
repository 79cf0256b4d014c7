package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// ErrBadReport means a message on a report subject is not a report the
// controller can take: it does not decode, or it is for another node than
// the subject it came on. Such a message is refused, never retried.
var ErrBadReport = errors.New("bus: bad report")

// reportVersion is the version of the report wire format written here.
const reportVersion = 1

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
//	  "outcome": {apply.reported payload, its "node" equal to "node"}
//	}
//
// It carries what commands.Delivery holds; the controller's wiring turns one
// into the other.
type Report struct {
	Version     int                  `json:"version"`
	Node        string               `json:"node"`
	ApplyID     uuid.UUID            `json:"apply_id"`
	AppliedAt   time.Time            `json:"applied_at"`
	Correlation string               `json:"correlation,omitempty"`
	Attempts    int                  `json:"attempts"`
	LastError   string               `json:"last_error,omitempty"`
	Outcome     events.ApplyReported `json:"outcome"`
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

// DecodeReport decodes a report that came on subject, and checks it: a
// known version, a valid node equal to the subject's and to the outcome's,
// an apply id (equal to the outcome's when that names one), an apply time.
// Every failure wraps ErrBadReport and says what was wrong.
func DecodeReport(subject string, data []byte) (Report, error) {
	node, ok := strings.CutPrefix(subject, ReportSubjectPrefix)
	if !ok {
		return Report{}, fmt.Errorf("%w: subject %q is not a report subject", ErrBadReport, subject)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("%w: on %s: %v", ErrBadReport, subject, err)
	}
	if r.Node != node {
		return Report{}, fmt.Errorf("%w: on %s: the report is node %q's", ErrBadReport, subject, r.Node)
	}
	if err := r.check(); err != nil {
		return Report{}, fmt.Errorf("%w (on %s)", err, subject)
	}
	return r, nil
}

// check says what is wrong with r.
func (r Report) check() error {
	switch {
	case r.Version != reportVersion:
		return fmt.Errorf("%w: version %d, want %d", ErrBadReport, r.Version, reportVersion)
	case r.ApplyID == uuid.Nil:
		return fmt.Errorf("%w: no apply id", ErrBadReport)
	case r.AppliedAt.IsZero():
		return fmt.Errorf("%w: apply %s: no applied_at", ErrBadReport, r.ApplyID)
	case r.Outcome.Node != r.Node:
		return fmt.Errorf("%w: apply %s: the outcome is node %q's, the report %q's", ErrBadReport, r.ApplyID, r.Outcome.Node, r.Node)
	case r.Outcome.ApplyID != "" && r.Outcome.ApplyID != r.ApplyID.String():
		return fmt.Errorf("%w: apply %s: the outcome names apply %s", ErrBadReport, r.ApplyID, r.Outcome.ApplyID)
	case r.Attempts < 0:
		return fmt.Errorf("%w: apply %s: %d attempts", ErrBadReport, r.ApplyID, r.Attempts)
	}
	if err := ValidNode(r.Node); err != nil {
		return fmt.Errorf("%w: %w", ErrBadReport, err)
	}
	return nil
}
