package replay

import (
	"errors"
	"time"
)

// ErrDiverged is Run's answer when today's run diverges from the
// recorded one: the Report says where (mesh replay exits 1).
var ErrDiverged = errors.New("today's run diverges from the recorded one")

// Report is what a replay found. Its JSON field names are a public API
// (mesh replay -o json).
type Report struct {
	History string    `json:"history"` // the file replayed
	Through uint64    `json:"through"` // the last position of it replayed (the file's numbering)
	At      time.Time `json:"at"`      // that event's time
	Events  int       `json:"events"`  // events read
	Passes  int       `json:"passes"`  // rounds replayed
	Nodes   []string  `json:"nodes"`   // every node of the history, sorted
	Inputs  Inputs    `json:"inputs"`
	// Agree is true when nothing diverged.
	Agree    bool   `json:"agree"`
	Recorded Totals `json:"recorded"`
	Today    Totals `json:"today"`
	// Divergences, by pass, node and kind.
	Divergences []Divergence `json:"divergences"`
	// The churn episodes of each run (projections.Churn), their passes
	// numbered as the divergences' are.
	ChurnRecorded []Episode `json:"churn_recorded"`
	ChurnToday    []Episode `json:"churn_today"`
}

// Inputs is what the replay read from the history and did again.
type Inputs struct {
	Commands    int `json:"commands"`     // operators' commands run again (builds and deploys included)
	Refused     int `json:"refused"`      // of them, refused by today's build
	Builds      int `json:"builds"`       // artifact.recorded among them
	FailedReads int `json:"failed_reads"` // node reads made to fail, summed over passes (declaration.compose-failed with a read)
	Removed     int `json:"removed"`      // containers removed from outside before a pass (an apply that created what was running)
	Cuts        int `json:"cuts"`         // sends cut (declaration.push-failed)
	Found       int `json:"found"`        // directories found on adopted nodes' disks (held in the history)
	// Unreplayed says what the history shows that the sandbox cannot
	// inject ("read the node list"): a pass that depended on it may
	// diverge for that reason.
	Unreplayed []string `json:"unreplayed,omitempty"`
}

// Totals counts what one run did.
type Totals struct {
	Composed        int `json:"composed"`         // declaration.composed
	ComposeFailed   int `json:"compose_failed"`   // declaration.compose-failed
	PushFailed      int `json:"push_failed"`      // declaration.push-failed
	Applies         int `json:"applies"`          // apply.reported
	Created         int `json:"created"`          // resources created, summed over applies
	Replaced        int `json:"replaced"`         // resources replaced, summed over applies
	Removed         int `json:"removed"`          // resources removed, summed over applies
	ReplacingPasses int `json:"replacing_passes"` // applies that replaced anything
	Episodes        int `json:"churn_episodes"`   // churn episodes (loops or flips)
}

// Divergence kinds.
const (
	KindCommand     = "command"     // an operator's command today's build refuses
	KindCompose     = "compose"     // composed in one run, failed or nothing new in the other
	KindDeclaration = "declaration" // both composed, other digests
	KindSend        = "send"        // a send failed in one run only
	KindApply       = "apply"       // resources created, replaced, updated, removed or failed differently
	KindHolds       = "holds"       // other holds
	KindChurn       = "churn"       // a churn episode in one run only
)

// Divergence is one difference between the runs, in one pass, on one
// node.
type Divergence struct {
	Pass     int       `json:"pass"`
	At       time.Time `json:"at"`       // the recorded pass's first event
	Position uint64    `json:"position"` // the recorded pass's last position (the file's)
	Node     string    `json:"node,omitempty"`
	Kind     string    `json:"kind"`
	Recorded string    `json:"recorded"` // what the recorded run did, in a sentence
	Today    string    `json:"today"`    // what today's did
	// Roster names one declaration has and the other not (KindDeclaration).
	RosterRecordedOnly []string `json:"roster_recorded_only,omitempty"`
	RosterTodayOnly    []string `json:"roster_today_only,omitempty"`
	// Resources that differ (KindDeclaration, KindApply, KindHolds).
	Resources []ResourceDiff `json:"resources,omitempty"`
}

// ResourceDiff is one resource that differs: its digest in each
// declaration (KindDeclaration; "" when absent) and the spec fields
// that differ when both specs are known, or what each apply did to it
// (KindApply: "replaced", "created", ..., "" for unchanged; Fields are
// the fields the apply named).
type ResourceDiff struct {
	Name     string   `json:"name"`
	Recorded string   `json:"recorded"`
	Today    string   `json:"today"`
	Fields   []string `json:"fields,omitempty"`
}

// Episode is a churn episode, its passes numbered as the replay's.
type Episode struct {
	Node        string `json:"node"`
	Loop        bool   `json:"loop"`
	Flip        bool   `json:"flip"`
	Start       int    `json:"start"`
	Detected    int    `json:"detected"`
	End         int    `json:"end,omitempty"` // 0 while open
	HeavyPasses int    `json:"heavy_passes"`
	Flips       int    `json:"flips"`
}
