package httpapi_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
)

// logService is a Service that reads logs: it answers chunks, then its
// err; with block, it waits for the reader to leave.
type logService struct {
	api.Service
	chunks []api.LogChunk
	err    error
	block  bool
	got    chan api.LogsRequest
}

func (s *logService) Logs(ctx context.Context, req api.LogsRequest, out func(api.LogChunk) error) error {
	s.got <- req
	for _, ch := range s.chunks {
		if err := out(ch); err != nil {
			return err
		}
	}
	if s.block {
		<-ctx.Done()
		return nil
	}
	return s.err
}

type noLogs struct{ api.Service }

// TestLogsOverHTTP: a container's log streams over the API chunk by
// chunk, with its request's tail and follow; a failure after the first
// chunk comes back as the service's refusal; a request without the token
// is refused before the service is asked; a service without logs says so;
// a follow is not cut by the client's timeout.
func TestLogsOverHTTP(t *testing.T) {
	unreadable := &commands.Rejection{Code: api.CodeLogsUnreadable, Msg: "logs of web on novox: no agent"}
	tests := []struct {
		name    string
		svc     api.Service
		tok     string
		req     api.LogsRequest
		timeout time.Duration
		want    string // the chunks' data, in order
		wantErr string
	}{
		{name: "a tail", svc: &logService{chunks: []api.LogChunk{{Data: []byte("a\n")}, {Data: []byte("b\x1b[31m\n"), Cut: true}}}, tok: token,
			req: api.LogsRequest{Node: "novox", Container: "web", Tail: 5}, want: "a\nb\x1b[31m\n"},
		{name: "a failure before any chunk", svc: &logService{err: unreadable}, tok: token,
			req: api.LogsRequest{Node: "novox", Container: "web"}, wantErr: "no agent"},
		{name: "a failure after a chunk", svc: &logService{chunks: []api.LogChunk{{Data: []byte("a\n")}}, err: unreadable}, tok: token,
			req: api.LogsRequest{Node: "novox", Container: "web", Follow: true}, want: "a\n", wantErr: "no agent"},
		{name: "no token", svc: &logService{}, tok: "wrong",
			req: api.LogsRequest{Node: "novox", Container: "web"}, wantErr: "unauthorized"},
		{name: "no logs here", svc: noLogs{}, tok: token,
			req: api.LogsRequest{Node: "novox", Container: "web"}, wantErr: "reads no container logs"},
		{name: "a follow outlives the client's timeout", svc: &logService{chunks: []api.LogChunk{{Data: []byte("a\n")}}, block: true}, tok: token,
			req: api.LogsRequest{Node: "novox", Container: "web", Follow: true}, timeout: 300 * time.Millisecond, want: "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ls, ok := tt.svc.(*logService); ok {
				ls.got = make(chan api.LogsRequest, 1)
			}
			srv := httptest.NewServer(httpapi.Handler(tt.svc, token))
			defer srv.Close()
			opts := []httpapi.ClientOption{}
			if tt.timeout > 0 {
				opts = append(opts, httpapi.WithTimeout(tt.timeout))
			}
			c, err := httpapi.NewClient(srv.URL, tt.tok, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got strings.Builder
			var err2 error
			if tt.timeout > 0 {
				err2 = c.Logs(ctx, tt.req, func(ch api.LogChunk) error {
					got.Write(ch.Data)
					time.AfterFunc(3*tt.timeout, cancel) // past the client's timeout
					return nil
				})
			} else {
				err2 = c.Logs(ctx, tt.req, func(ch api.LogChunk) error { got.Write(ch.Data); return nil })
			}
			if got.String() != tt.want {
				t.Errorf("data %q, want %q", got.String(), tt.want)
			}
			switch {
			case tt.wantErr == "" && err2 != nil:
				t.Errorf("err %v", err2)
			case tt.wantErr != "" && (err2 == nil || !strings.Contains(err2.Error(), tt.wantErr)):
				t.Errorf("err %v, want one naming %q", err2, tt.wantErr)
			}
			if ls, ok := tt.svc.(*logService); ok {
				select {
				case req := <-ls.got:
					if tt.tok != token {
						t.Errorf("the service was asked %+v without the token", req)
					} else if req != tt.req {
						t.Errorf("the service was asked %+v, want %+v", req, tt.req)
					}
				default:
					if tt.tok == token {
						t.Error("the service was never asked")
					}
				}
			}
			var rej *commands.Rejection
			if tt.name == "a failure after a chunk" && (!errors.As(err2, &rej) || rej.Code != api.CodeLogsUnreadable) {
				t.Errorf("err %#v, want a rejection %s", err2, api.CodeLogsUnreadable)
			}
		})
	}
}
