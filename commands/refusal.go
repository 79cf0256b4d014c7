package commands

import (
	"errors"
	"fmt"
)

// BatchRefused says of a refusal of a batch of n commands that none was
// written (a batch is all or nothing). Other errors, and a refusal of one
// command, are returned as they are.
func BatchRefused(err error, n int) error {
	var rej *Rejection
	if n > 1 && errors.As(err, &rej) {
		return &Rejection{Code: rej.Code, Msg: fmt.Sprintf("%s (none of the %d was written)", rej.Msg, n)}
	}
	return err
}
