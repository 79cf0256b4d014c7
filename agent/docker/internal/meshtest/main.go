// Command meshtest is the program inside the Docker runtime's test images
// (see package testimage): a static binary that runs until it is told to
// stop, and prints a file on request, so the tests need nothing pulled from
// outside.
//
//	meshtest [ARGS...]      run until SIGTERM or SIGINT (any ARGS are ignored)
//	meshtest cat FILE       print FILE and exit
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "cat" {
		b, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Stdout.Write(b)
		return
	}
	// As PID 1 a process gets no default signal handling: ask for it, so
	// that docker stop stops it at once.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
