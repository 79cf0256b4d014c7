package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"meshplane/api"
	"meshplane/events"
)

// Sentinel errors.
var (
	// ErrUnauthorized means the controller refused the request's token
	// (HTTP 401): none was sent, or not the controller's.
	ErrUnauthorized = errors.New("api: unauthorized: the token is missing or wrong")

	// ErrInsecureListen means an address beyond loopback was to be served
	// without TLS, and Insecure was not set.
	ErrInsecureListen = errors.New("api: refusing to listen beyond loopback without TLS")
)

// Error is a failure the controller reported that is not a rejection: its
// HTTP status and, when the body was the API's error form, its code.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Is makes an answer 507 store-full events.ErrStoreFull, as the
// controller's own error was: a caller branches on it alike, local or
// remote.
func (e *Error) Is(target error) bool {
	return target == events.ErrStoreFull && e.Code == api.CodeStoreFull
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("api: %s: %s", http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("api: %s (%s): %s", http.StatusText(e.Status), e.Code, e.Message)
}

// errorBody is the wire form of every error the API returns:
//
//	{"error": {"code": "node-unknown", "message": "node novox is not registered"}}
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StatusOf is the HTTP status a rejection code travels with: 404 for what
// names something unknown, 409 for what conflicts with the state, 422 for
// the rest (invalid, and codes this build does not know). A request the
// handler cannot parse is 400, still with code "invalid".
func StatusOf(code string) int {
	switch code {
	case api.CodeNodeUnknown, api.CodeModuleUnknown, api.CodeDeclarationUnknown, api.CodeResourceUnknown, api.CodeTokenUnknown, api.CodeNoSuchToken, CodeNoCA:
		return http.StatusNotFound
	case api.CodeModuleAssigned, api.CodeModulesAssigned,
		api.CodeNotAssigned, api.CodeNotAdopted, api.CodeRouteClaimed, api.CodeNoBuild, api.CodeStandby,
		api.CodeTokenUsed, api.CodeTokenExpired, api.CodeTokenOtherNode, api.CodeTokenExists:
		return http.StatusConflict
	default:
		return http.StatusUnprocessableEntity
	}
}

// rejectionStatus reports whether a status carries a rejection back to the
// client.
func rejectionStatus(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// badRequest is a request the handler could not parse: a rejection
// (invalid), sent with status 400.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Sprintf(format, args...)}
}
