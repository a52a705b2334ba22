package upstream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// echoAuth rejects every request, quoting its Authorization header, as some servers do.
func echoAuth(status int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprintf(w, "credentials %q rejected", r.Header.Get("Authorization"))
	}))
}

func replyBody(t *testing.T, u models.Upstream) (int, string) {
	t.Helper()
	c, err := NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Get(u.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

func TestErrorRepliesLoseTheSecrets(t *testing.T) {
	srv := echoAuth(http.StatusUnauthorized)
	defer srv.Close()

	status, body := replyBody(t, models.Upstream{Name: models.Jaeger, URL: srv.URL, Timeout: time.Second, Auth: models.AuthBearer, BearerToken: "tok-9f8e7d"})
	if status != 401 || strings.Contains(body, "tok-9f8e7d") || body != `credentials "Bearer [redacted]" rejected` {
		t.Errorf("bearer: %d %q", status, body)
	}
	// The password travels base64-encoded in the header: that form must go as well.
	status, body = replyBody(t, models.Upstream{Name: models.Pyroscope, URL: srv.URL, Timeout: time.Second, Auth: models.AuthBasic, User: "u", Password: "pw-1a2b3c"})
	encoded := base64.StdEncoding.EncodeToString([]byte("u:pw-1a2b3c"))
	if status != 401 || strings.Contains(body, encoded) || body != `credentials "Basic [redacted]" rejected` {
		t.Errorf("basic: %d %q", status, body)
	}
}

func TestSuccessfulRepliesAreLeftAlone(t *testing.T) {
	srv := echoAuth(http.StatusOK)
	defer srv.Close()
	_, body := replyBody(t, models.Upstream{Name: models.Jaeger, URL: srv.URL, Timeout: time.Second, Auth: models.AuthBearer, BearerToken: "tok-9f8e7d"})
	if body != `credentials "Bearer tok-9f8e7d" rejected` {
		t.Errorf("a 200 reply is data and must not change: %q", body)
	}
}

func TestDescribeFaults(t *testing.T) {
	tooLarge := func(limit int64) error {
		_, err := io.ReadAll(httpclient.MaxBytesReader(io.NopCloser(strings.NewReader(strings.Repeat("x", int(limit)+1))), limit))
		return &url.Error{Op: "Get", URL: "http://x", Err: err}
	}
	cases := []struct {
		err  error
		want string
	}{
		{tooLarge(4 << 20), "reply larger than the response limit (4 MiB)"},
		{tooLarge(1500), "reply larger than the response limit (1500 bytes)"},
		{&url.Error{Op: "Get", URL: "http://x", Err: io.ErrUnexpectedEOF}, "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"},
		{connect.NewError(connect.CodeUnknown, fmt.Errorf("read message: %w", io.ErrUnexpectedEOF)), "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"},
		{fmt.Errorf("reply to /api/v3/services is %w (the JSON ends early): %w", ErrReplyTruncated, io.ErrUnexpectedEOF), "reply to /api/v3/services is truncated (the JSON ends early): unexpected EOF"},
		// The word alone is not the client's error: a cut reply is said in the generic words.
		{fmt.Errorf("body truncated: %w", io.ErrUnexpectedEOF), "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"},
		{connect.NewError(connect.CodeInvalidArgument, errors.New("unmarshal message: proto: cannot parse invalid wire-format data")),
			"invalid reply, not the protobuf Pyroscope sends (unmarshal message: proto: cannot parse invalid wire-format data)"},
		{connect.NewError(connect.CodeUnknown, errors.New(`invalid content-type: "text/html"; expecting "application/proto"`)),
			`the reply is not a Pyroscope API reply (invalid content-type: "text/html"; expecting "application/proto"): is this URL a Pyroscope server?`},
		{&promv1.Error{Type: promv1.ErrBadResponse, Msg: "invalid character '<' looking for beginning of value"},
			"invalid reply, not the JSON Prometheus sends (invalid character '<' looking for beginning of value)"},
		{&promv1.Error{Type: promv1.ErrServer, Msg: "server error: 503", Detail: "upstream\nconnect error\n"}, "server error: 503: upstream connect error"},
		{&promv1.Error{Type: promv1.ErrClient, Msg: "client error: 401"}, "client_error: client error: 401"},
		{context.DeadlineExceeded, "timed out (context deadline exceeded)"},
	}
	for _, c := range cases {
		if got := Describe(c.err); got != c.want {
			t.Errorf("Describe(%v)\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}
