package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"meshplane/api"
	"meshplane/commands"
)

// Container logs: GET /v1/nodes/{node}/containers/{container}/logs
// ?tail=N&follow=true (api.Logs). The answer is a stream of JSON lines
// (application/x-ndjson), one api.LogChunk a line, flushed as each comes;
// a failure before the first line is the API's error form with its
// status, one after it a last line with "error" alone. A follow runs
// until the client goes.

var _ api.Logs = (*Client)(nil)

// maxLogLine bounds one line of the stream: a chunk's bytes in base64 and
// their JSON around them.
const maxLogLine = 1 << 20

func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	lg, ok := optional[api.Logs](h, w, r, "this service reads no container logs (it has no bus to ask agents on)")
	if !ok {
		return
	}
	if _, historic := r.Context().Value(atKey{}).(api.Service); historic || r.URL.Query().Has("at") {
		h.fail(w, r, badRequestf("at: a container's log is read now, never as of a moment"))
		return
	}
	q := r.URL.Query()
	req := api.LogsRequest{Node: r.PathValue("node"), Container: r.PathValue("container")}
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			h.fail(w, r, badRequestf("tail: %q is not a number of lines", s))
			return
		}
		req.Tail = n
	}
	if s := q.Get("follow"); s != "" {
		f, err := strconv.ParseBool(s)
		if err != nil {
			h.fail(w, r, badRequestf("follow: %q is not true or false", s))
			return
		}
		req.Follow = f
	}
	if !h.valid(w, r, req) {
		return
	}
	rc := http.NewResponseController(w)
	// A follow outlives the server's read timeout, which would otherwise
	// end the request's context.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	started := false
	enc := json.NewEncoder(w)
	err := lg.Logs(r.Context(), req, func(ch api.LogChunk) error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(ch); err != nil {
			return err
		}
		return rc.Flush()
	})
	switch {
	case err == nil && !started: // the client left before anything came
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	case err != nil && !started:
		h.fail(w, r, err)
	case err != nil && r.Context().Err() == nil:
		_ = enc.Encode(api.LogChunk{Error: err.Error()})
	}
}

// Logs asks GET /v1/nodes/{node}/containers/{container}/logs and hands
// each chunk to out as it comes. A follow is bounded by ctx alone, never
// by the client's timeout; a failure the server reports after the first
// chunk is a rejection (CodeLogsUnreadable) with its message.
func (c *Client) Logs(ctx context.Context, req api.LogsRequest, out func(api.LogChunk) error) error {
	if err := req.Validate(); err != nil {
		return err
	}
	path := "/v1/nodes/" + url.PathEscape(req.Node) + "/containers/" + url.PathEscape(req.Container) + "/logs"
	query := url.Values{"tail": {strconv.Itoa(req.Tail)}, "follow": {strconv.FormatBool(req.Follow)}}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+path+"?"+query.Encode(), nil)
	if err != nil {
		return fmt.Errorf("api: GET %s: %w", path, err)
	}
	hr.Header.Set("Authorization", "Bearer "+c.token)
	hr.Header.Set("Accept", "application/x-ndjson")
	hc := *c.http
	if req.Follow {
		hc.Timeout = 0 // ctx ends it
	}
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("api: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return decodeError(resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	for sc.Scan() {
		var ch api.LogChunk
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			return fmt.Errorf("api: GET %s: decode a chunk: %w", path, err)
		}
		if ch.Error != "" {
			return &commands.Rejection{Code: api.CodeLogsUnreadable, Msg: ch.Error}
		}
		if err := out(ch); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("api: GET %s: read the stream: %w", path, err)
	}
	return nil
}
