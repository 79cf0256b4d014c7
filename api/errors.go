package api

// Codes of errors that are not rejections. They travel in the API's error
// form ({"error": {"code": ..., "message": ...}}); package httpapi maps
// each to its HTTP status.
const (
	CodeInternal     = "internal"     // the controller failed
	CodeUnauthorized = "unauthorized" // the token is missing or wrong
	CodeTooLarge     = "too-large"    // the request body exceeded the limit
	CodeUnavailable  = "unavailable"  // the controller is stopping
	// CodeStoreFull: the event store could not write for lack of space
	// (events.ErrStoreFull), HTTP 507 Insufficient Storage. Nothing was
	// written; the same request succeeds once there is room.
	CodeStoreFull = "store-full"
)

// CodeStandby is the rejection of a write sent to a standby controller:
// another controller holds the store's leader lock; send it there.
const CodeStandby = "standby"
