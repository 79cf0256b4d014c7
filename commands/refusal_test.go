package commands

import (
	"errors"
	"io"
	"testing"
)

func TestBatchRefused(t *testing.T) {
	rej := &Rejection{Code: CodeNodeUnknown, Msg: `node "x" is not registered`}
	for _, tc := range []struct {
		name string
		err  error
		n    int
		want string
	}{
		{"a batch's refusal says none was written", rej, 3, `node "x" is not registered (none of the 3 was written)`},
		{"one command's refusal is as it is", rej, 1, `node "x" is not registered`},
		{"another error is as it is", io.ErrUnexpectedEOF, 3, io.ErrUnexpectedEOF.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := BatchRefused(tc.err, tc.n)
			if err.Error() != tc.want {
				t.Fatalf("got %q, want %q", err, tc.want)
			}
			var got *Rejection
			if errors.As(tc.err, &got) && (!errors.As(err, &got) || got.Code != rej.Code) {
				t.Fatalf("the refusal's code is lost: %v", err)
			}
		})
	}
}
