// Package usage is the error of a wrong command line, or of a value it
// gave: for the CLI, bad usage (exit 2). The rooms that check what flags
// set (agentd's Config, sim's Options, daemon's bus settings) return it,
// so the CLI says what they say without wrapping it. It imports nothing
// of the CLI, so that the agent's rooms can use it.
package usage

import (
	"errors"
	"fmt"
)

// Err means a command line, or a value it gave, is wrong.
var Err = errors.New("bad usage")

// usageError is an Err that says only what is wrong.
type usageError string

func (e usageError) Error() string        { return string(e) }
func (e usageError) Is(target error) bool { return target == Err }

// Errorf is an Err saying what is wrong.
func Errorf(format string, args ...any) error {
	return usageError(fmt.Sprintf(format, args...))
}
