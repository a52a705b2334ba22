package upstream

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Redacted stands in for a secret removed from an upstream's reply.
const Redacted = "[redacted]"

// maxErrorBody is how much of an error reply is kept: the clients quote its start, and nobody
// reads more in a message.
const maxErrorBody = 64 << 10

// Secrets lists what of u's secureJsonData could come back in an upstream's reply: the
// password, the token, and the Basic header's base64, which carries the password too. An
// empty list means nothing to redact.
func Secrets(u models.Upstream) []string {
	var out []string
	if u.Password != "" {
		out = append(out, u.Password, base64.StdEncoding.EncodeToString([]byte(u.User+":"+u.Password)))
	}
	if u.BearerToken != "" {
		out = append(out, u.BearerToken)
	}
	return out
}

// Redact replaces every secret in b with Redacted.
func Redact(b []byte, secrets []string) []byte {
	for _, s := range secrets {
		if s != "" {
			b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
		}
	}
	return b
}

// redactErrorReplies removes the secrets from the body of every non-2xx reply. Those bodies end
// up in error messages (the clients quote them), and some servers quote the credentials they
// rejected: without this, a 401 would show the token in the panel, the logs and the spans.
// Successful replies are data and are left untouched.
func redactErrorReplies(secrets []string) httpclient.Middleware {
	return httpclient.NamedMiddlewareFunc("hsi-redact-secrets", func(_ httpclient.Options, next http.RoundTripper) http.RoundTripper {
		if len(secrets) == 0 {
			return next
		}
		return httpclient.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			res, err := next.RoundTrip(req)
			if err != nil || res.StatusCode/100 == 2 {
				return res, err
			}
			body, readErr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			res.Body.Close()
			parts := []io.Reader{bytes.NewReader(Redact(body, secrets))}
			if readErr != nil {
				parts = append(parts, errorReader{readErr}) // the client still learns the reply broke off
			}
			res.Body = io.NopCloser(io.MultiReader(parts...))
			res.ContentLength = -1
			res.Header.Del("Content-Length")
			return res, nil
		})
	})
}

type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) { return 0, r.err }
