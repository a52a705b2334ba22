package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
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
		return fmt.Sprintf("reply larger than %d MiB", MaxResponseBytes>>20)
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
	return innermost(err)
}

func connectCause(ce *connect.Error) string {
	msg := ce.Message()
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
