package tempo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/otlptrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// The API that answered a trace, as models.Trace.API says.
const (
	APIv2 = "tempo v2"
	APIv1 = "tempo v1"
)

// Field numbers of Tempo's TraceByIDResponse (pkg/tempopb/tempo.proto): the trace (a Trace,
// whose only field, resourceSpans = 1, is OTLP's TracesData on the wire), and the partial status
// with its message.
const (
	fieldTrace   protowire.Number = 1
	fieldStatus  protowire.Number = 3
	fieldMessage protowire.Number = 4
	// statusPartial is PartialStatus.PARTIAL.
	statusPartial = 1
)

// traceNotFoundError says Tempo holds no span of the trace.
type traceNotFoundError struct{ traceID string }

func (e *traceNotFoundError) Error() string {
	return fmt.Sprintf("trace %s not found (older than Tempo's retention, not yet flushed from its ingesters, or another tenant's)", e.traceID)
}

func (e *traceNotFoundError) Is(target error) bool { return target == models.ErrTraceNotFound }

// Trace fetches all spans of one trace: Tempo's v2 path in protobuf (OTLP spans, with whether
// the trace is partial), else, where the server has no v2 path, the v1 one. A partial trace
// (larger than the server's limit, or pruned) is answered with what it holds and its reason in
// Partial.
func (c *Client) Trace(ctx context.Context, traceID string) (tr *models.Trace, err error) {
	// The ID goes into the URL path: only hex may pass. A bad ID is the caller's error.
	if !models.IsHexTraceID(traceID) {
		return nil, fmt.Errorf("trace ID %q is not 16 or 32 hex digits", traceID)
	}
	id := strings.ToLower(traceID)
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "Trace", attribute.String("hsi.trace_id", id))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()

	api := APIv2
	body, err := c.get(ctx, pathTraceV2+id, nil, mediaTypeProtobuf)
	var partial string
	var traceBytes []byte
	if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
		// Before the v2 path (Tempo 2.5), or a trace the server hides: the v1 path tells.
		api = APIv1
		traceBytes, err = c.get(ctx, pathTraceV1+id, nil, mediaTypeProtobuf)
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
			return nil, &traceNotFoundError{traceID: id}
		}
	} else if err == nil {
		traceBytes, partial, err = readTraceByIDResponse(body)
		if err != nil {
			return nil, fmt.Errorf("reply to %s%s is not the protobuf TraceByIDResponse Tempo sends: %w", pathTraceV2, id, err)
		}
	}
	if err != nil {
		return nil, err
	}
	td, err := otlptrace.UnmarshalProto(traceBytes)
	if err != nil {
		return nil, fmt.Errorf("the trace in Tempo's reply for %s is not OTLP protobuf: %v", id, err) // %v: a parse error is no cut connection
	}
	spans, err := otlptrace.Spans(td)
	if err != nil {
		return nil, fmt.Errorf("the trace in Tempo's reply for %s has %w", id, err)
	}
	if len(spans) == 0 {
		// The v2 path answers a trace it does not hold with an empty trace, not 404.
		return nil, &traceNotFoundError{traceID: id}
	}
	models.SortSpans(spans)
	return &models.Trace{TraceID: models.PadTraceID(id), Spans: spans, API: api, Partial: partial}, nil
}

// readTraceByIDResponse reads the envelope of the v2 path: the trace's bytes, and the message
// (or a default) when the status is partial. Unknown fields (the metrics) are skipped.
func readTraceByIDResponse(b []byte) (trace []byte, partial string, err error) {
	var status uint64
	var message string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, "", parseError(n)
		}
		b = b[n:]
		switch {
		case num == fieldTrace && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, "", parseError(n)
			}
			trace, b = v, b[n:]
		case num == fieldStatus && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, "", parseError(n)
			}
			status, b = v, b[n:]
		case num == fieldMessage && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, "", parseError(n)
			}
			message, b = string(v), b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, "", parseError(n)
			}
			b = b[n:]
		}
	}
	if status == statusPartial {
		partial = message
		if partial == "" {
			partial = "Tempo returned part of the trace"
		}
	}
	return trace, partial, nil
}

// parseError is protowire's error for n as text only: a truncated field would otherwise read as
// io.ErrUnexpectedEOF, a connection cut short, when the reply is simply not protobuf.
func parseError(n int) error { return errors.New(protowire.ParseError(n).Error()) }
