// Command swaplink is the program inside the image of the Docker runtime's
// link test: a container that can write to a mounted directory, and uses
// that to put symbolic links where the agent keeps declared files.
//
//	swaplink serve          wait for SIGTERM or SIGINT
//	swaplink ln TARGET PATH remove whatever is at PATH and put a symbolic
//	                        link to TARGET there
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	switch {
	case len(os.Args) == 4 && os.Args[1] == "ln":
		if err := os.RemoveAll(os.Args[3]); err != nil {
			fail(err)
		}
		if err := os.Symlink(os.Args[2], os.Args[3]); err != nil {
			fail(err)
		}
	case len(os.Args) == 2 && os.Args[1] == "serve":
		// As PID 1 a process gets no default signal handling: ask for it.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
	default:
		fail(fmt.Errorf("usage: swaplink serve | swaplink ln TARGET PATH"))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "swaplink:", err)
	os.Exit(1)
}
