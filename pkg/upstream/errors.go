package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Error is a failed call to an upstream: which upstream, its base URL, and what went wrong, in
// words a user can act on. All upstream failures are downstream errors in Grafana's sense.
type Error struct {
	Upstream string // Pyroscope, Prometheus or Jaeger
	URL      string // the configured base URL (never carries credentials: settings reject them)
	Cause    string // "unreachable (dial tcp ...: connection refused)", "HTTP 503: ...", ...
	Err      error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Upstream, e.URL, e.Cause)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrReplyTruncated marks a client's own error for a reply that ended early, whose message
// already says which reply ("reply to /api/v3/traces/… is truncated …"): wrap it with %w where
// the message says "truncated".
var ErrReplyTruncated = errors.New("truncated")

// Wrap classifies err from a call to the named upstream. It returns nil for nil and leaves an
// *Error as it is.
func Wrap(name, baseURL string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return backend.DownstreamError(&Error{Upstream: name, URL: baseURL, Cause: Describe(err), Err: err})
}

// HTTPStatusError is returned by the hand-written HTTP clients for a non-2xx reply.
type HTTPStatusError struct {
	Status int
	Body   string
}

func (e *HTTPStatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// Describe says what went wrong with an upstream call, shortest useful form first.
func Describe(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timed out (" + innermost(err) + ")"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, httpclient.ErrResponseBodyTooLarge):
		// Grafana's GF_RESPONSE_LIMIT usually sets the limit, not MaxResponseBytes: say the one
		// that applied, which the SDK's error carries.
		return "reply larger than the response limit" + limitOf(err)
	case errors.Is(err, ErrReplyTruncated):
		return innermost(err) // the client already said which reply
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"
	}
	if op, ok := errors.AsType[*net.OpError](err); ok {
		return "unreachable (" + op.Error() + ")"
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return "unreachable (" + dns.Error() + ")"
	}
	if st, ok := errors.AsType[*HTTPStatusError](err); ok {
		return st.Error()
	}
	if ce, ok := errors.AsType[*connect.Error](err); ok {
		return connectCause(ce)
	}
	if pe, ok := errors.AsType[*promv1.Error](err); ok {
		return promCause(pe)
	}
	return innermost(err)
}

// promCause is client_golang's error in words: its Error() leaves out the body of a 4xx or 5xx
// reply (Detail), which is where a proxy or server says what is wrong.
func promCause(pe *promv1.Error) string {
	switch {
	case pe.Type == promv1.ErrBadResponse:
		return "invalid reply, not the JSON Prometheus sends (" + pe.Msg + ")"
	case (pe.Type == promv1.ErrServer || pe.Type == promv1.ErrClient) && strings.TrimSpace(pe.Detail) != "":
		detail := strings.Join(strings.Fields(pe.Detail), " ")
		if len(detail) > 300 {
			detail = strings.ToValidUTF8(detail[:300], "") + "…" // the cut may split a character
		}
		return pe.Msg + ": " + detail
	}
	return pe.Error()
}

// limitPattern finds the limit in the SDK's "response limit is set to: 4194304".
var limitPattern = regexp.MustCompile(`response limit is set to: (\d+)`)

// limitOf says the response limit err reports, as " (4 MiB)", or "" when it does not say.
func limitOf(err error) string {
	m := limitPattern.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	n, perr := strconv.ParseInt(m[1], 10, 64)
	switch {
	case perr != nil:
		return ""
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf(" (%d MiB)", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf(" (%.1f MiB)", float64(n)/(1<<20))
	}
	return fmt.Sprintf(" (%d bytes)", n)
}

func connectCause(ce *connect.Error) string {
	msg := ce.Message()
	switch {
	case strings.HasPrefix(msg, "unmarshal message:"):
		// Connect files a reply it cannot decode under invalid_argument, which would read as
		// the user's mistake.
		return "invalid reply, not the protobuf Pyroscope sends (" + msg + ")"
	case strings.HasPrefix(msg, "invalid content-type:"):
		return "the reply is not a Pyroscope API reply (" + msg + "): is this URL a Pyroscope server?"
	}
	switch ce.Code() {
	case connect.CodeUnauthenticated:
		return "authentication failed (" + msg + ")"
	case connect.CodePermissionDenied:
		return "permission denied (" + msg + ")"
	case connect.CodeUnimplemented:
		return "does not support this call (" + msg + "): is this URL a Pyroscope server?"
	case connect.CodeUnavailable:
		return "unavailable (" + msg + ")"
	case connect.CodeDeadlineExceeded:
		return "timed out (" + msg + ")"
	}
	return ce.Code().String() + ": " + msg
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// innermost drops the "Get \"http://...\":" prefix of url.Error: the URL is said once, by Error.
func innermost(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return strings.TrimSpace(ue.Err.Error())
	}
	return err.Error()
}
