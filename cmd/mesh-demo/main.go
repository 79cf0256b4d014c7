// Command mesh-demo is the program inside the images the project builds
// itself (package imagebuild): the example mesh's containers on a real
// Docker engine (`mesh up`, examples/local) and the Docker runtime's tests.
// It is built static (CGO_ENABLED=0), so it is the one file of its image:
// nothing is pulled from outside this machine.
//
//	mesh-demo [ARGS...]   serve HTTP until SIGTERM or SIGINT (ARGS are ignored,
//	                      so a module's command can be anything)
//	mesh-demo cat FILE    print FILE and exit
//
// It serves on $MESH_DEMO_LISTEN (default ":8080"): GET / answers with
// $MESH_DEMO_GREETING and the names the container resolves (/etc/hosts, the
// mesh's roster, rewritten in place by the agent); GET /healthz answers ok.
// A listener it cannot open is logged, and it runs on until stopped.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	addr := os.Getenv("MESH_DEMO_LISTEN")
	if addr == "" {
		addr = ":8080"
	}
	srv := &http.Server{Addr: addr, Handler: handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		log.Printf("mesh-demo: serving on %s", addr)
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("mesh-demo: %v (running on without it)", err)
		}
	}()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
}

func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		greeting := os.Getenv("MESH_DEMO_GREETING")
		if greeting == "" {
			greeting = "mesh-demo"
		}
		host, _ := os.Hostname()
		fmt.Fprintf(w, "%s (container %s)\n\n/etc/hosts:\n", greeting, host)
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			w.Write(b)
		} else {
			fmt.Fprintf(w, "(%v)\n", err)
		}
	})
	return mux
}
