// Package models holds the data source settings and the query model, with their validation.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Upstream names, as users see them in messages.
const (
	Pyroscope  = "Pyroscope"
	Prometheus = "Prometheus"
	Jaeger     = "Jaeger"
	Tempo      = "Tempo"
)

// Auth kinds an upstream can use.
const (
	AuthNone   = "none"
	AuthBasic  = "basic"
	AuthBearer = "bearer"
)

// DefaultTimeout bounds every upstream call unless the settings say otherwise.
const DefaultTimeout = 30 * time.Second

// MaxTimeout is the longest timeout the settings accept; Grafana's own proxy gives up earlier.
const MaxTimeout = 300 * time.Second

// Upstream is one server the plugin talks to, with its own auth, TLS and timeout.
//
// Settings are stored flat in jsonData with the upstream's key as prefix (pyroscopeUrl,
// pyroscopeAuth, pyroscopeBasicAuthUser, ...), because provisioning files are easiest to write
// that way; secrets use the same prefix in secureJsonData.
type Upstream struct {
	Name    string // Pyroscope, Prometheus, Jaeger or Tempo
	Key     string // jsonData prefix: pyroscope, prometheus, jaeger or tempo
	URL     string // empty when the upstream is not configured
	Auth    string
	User    string
	Timeout time.Duration
	TLS     TLS

	// Tenant is sent as X-Scope-OrgID (Pyroscope, multi-tenant Tempo, and Mimir/Cortex-style
	// Prometheus).
	Tenant string

	// Secrets, from secureJsonData only. Never logged, returned or put in frames.
	Password    string
	BearerToken string
}

// TLS options of one upstream.
type TLS struct {
	SkipVerify bool
	ServerName string
	CACert     string // secureJsonData
	ClientCert string // secureJsonData
	ClientKey  string // secureJsonData
}

// Configured says whether the user set a URL for this upstream.
func (u Upstream) Configured() bool { return u.URL != "" }

// Settings is one data source instance's configuration.
type Settings struct {
	Pyroscope  Upstream
	Prometheus Upstream
	Jaeger     Upstream
	Tempo      Upstream

	// TraceStore is jsonData.traceStore: which of Jaeger and Tempo the trace-reading queries ask
	// (TraceStoreJaeger, TraceStoreTempo), or "" for the one whose URL is set (Jaeger when both
	// are). See TraceUpstream.
	TraceStore string

	// SelfProfilingURL names a Pyroscope the plugin pushes its own profiles to; empty means off.
	SelfProfilingURL string

	// MinStep is the smallest step of a metrics query (jsonData.minStep, the key and default of
	// Grafana's Pyroscope data source). An invalid value (Invalid.MinStep) is reported by the
	// metrics queries instead of silently using the default as Grafana does.
	MinStep time.Duration

	// DCGM names the metrics and labels of the GPU series (settings_dcgm.go).
	DCGM DCGMSettings
	// Classify holds the workload-classification thresholds (settings_classify.go).
	Classify ClassifySettings
	// Join says how spans map to hosts and GPUs, and where links point (settings_join.go).
	Join JoinSettings
	// Containers names cAdvisor's CPU series (settings_containers.go).
	Containers ContainerSettings
	// Traces say where GPU kernel traces are read from (settings_traces.go).
	Kernels KernelTraceSettings
	// NVMLEnabled turns on the gpuLocal query type (jsonData.nvmlEnabled, default false): the
	// Grafana host's GPUs through NVML.
	NVMLEnabled bool
}

// Invalid is what could not be used of a data source's settings, each where it matters: an
// upstream with invalid settings cannot be asked (its store is unavailable and says why), the
// GPU query types report invalid GPU keys rather than silently use defaults, invalid join keys
// keep their defaults with a warning. The zero Invalid: every setting is valid.
type Invalid struct {
	// Upstreams are the upstreams' invalid settings, by upstream name (Pyroscope, Prometheus,
	// Jaeger, Tempo): "invalid Pyroscope settings: …".
	Upstreams map[string]error
	// MinStep is an invalid jsonData.minStep.
	MinStep error
	// GPU joins every invalid GPU-related key (DCGM names, classification thresholds, join).
	GPU error
	// Join is the invalid join keys alone (their defaults are used).
	Join error
	// Kernels is the invalid kernel-trace keys.
	Kernels error
	// Containers is the invalid cAdvisor name keys (their defaults are used).
	Containers error
	// NVML is an invalid jsonData.nvmlEnabled.
	NVML error
	// TraceStore is an invalid jsonData.traceStore: no trace is read until it is fixed, as
	// reading the other store would answer from traces the user did not choose.
	TraceStore error
}

// Upstream is why the named upstream's settings cannot be used, nil when they can.
func (i Invalid) Upstream(name string) error { return i.Upstreams[name] }

// SetUpstream records why the named upstream cannot be used (its client could not be made).
func (i *Invalid) SetUpstream(name string, err error) {
	if i.Upstreams == nil {
		i.Upstreams = map[string]error{}
	}
	i.Upstreams[name] = err
}

// DefaultMinStep is Grafana's Pyroscope data source's default for jsonData.minStep.
const DefaultMinStep = 15 * time.Second

// Upstreams lists the upstreams in the order messages name them.
func (s *Settings) Upstreams() []*Upstream {
	return []*Upstream{&s.Pyroscope, &s.Prometheus, &s.Jaeger, &s.Tempo}
}

// The values of jsonData.traceStore.
const (
	TraceStoreJaeger = "jaeger"
	TraceStoreTempo  = "tempo"
)

// TraceUpstream is the upstream traces are read from: the one jsonData.traceStore names, else
// the one whose URL is set, else Jaeger when both are (it was the only trace store before Tempo,
// so a data source that gains a Tempo URL keeps its answers until the user chooses). It fails,
// saying what to set, when none can be used.
func (s *Settings) TraceUpstream() (*Upstream, error) {
	switch s.TraceStore {
	case TraceStoreJaeger, TraceStoreTempo:
		u := &s.Jaeger
		if s.TraceStore == TraceStoreTempo {
			u = &s.Tempo
		}
		if !u.Configured() {
			return nil, fmt.Errorf("jsonData.traceStore is %s, but %s is not configured: set its URL (jsonData.%sUrl), or choose the other trace store", s.TraceStore, u.Name, u.Key)
		}
		return u, nil
	case "":
	default:
		return nil, fmt.Errorf("jsonData.traceStore must be jaeger or tempo, got %q", truncate(s.TraceStore, 40))
	}
	switch {
	case s.Jaeger.Configured():
		return &s.Jaeger, nil
	case s.Tempo.Configured():
		return &s.Tempo, nil
	}
	return nil, ErrNoTraceStore
}

// ErrNoTraceStore is TraceUpstream's error when neither trace store is configured: a query that
// only adds to what a trace store answers says so as advice, not as an error.
var ErrNoTraceStore = errors.New("the trace store is not configured: set Jaeger's URL (jsonData.jaegerUrl) or Tempo's (jsonData.tempoUrl) in the data source settings")

// LoadSettings reads jsonData and secureJsonData. It fails only when jsonData is not a JSON
// object; what is invalid is returned apart (Invalid), each part where it matters, so that the
// rest keeps working.
func LoadSettings(s backend.DataSourceInstanceSettings) (*Settings, Invalid, error) {
	raw := map[string]json.RawMessage{}
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &raw); err != nil {
			return nil, Invalid{}, fmt.Errorf("data source settings (jsonData) are not a JSON object: %w", err)
		}
	}
	j := jsonFields(raw)
	out, bad := &Settings{}, Invalid{}
	for _, u := range []struct {
		into      *Upstream
		name, key string
	}{{&out.Pyroscope, Pyroscope, "pyroscope"}, {&out.Prometheus, Prometheus, "prometheus"}, {&out.Jaeger, Jaeger, "jaeger"}, {&out.Tempo, Tempo, "tempo"}} {
		var err error
		if *u.into, err = loadUpstream(u.name, u.key, j, s.DecryptedSecureJSONData); err != nil {
			bad.SetUpstream(u.name, err)
		}
	}
	out.MinStep, bad.MinStep = loadMinStep(j)
	if out.TraceStore, bad.TraceStore = j.str("traceStore"); bad.TraceStore == nil {
		out.TraceStore = strings.ToLower(strings.TrimSpace(out.TraceStore))
		bad.TraceStore = validTraceStore(out.TraceStore)
	}
	bad.Join = loadJoin(j, &out.Join)
	if _, set := j["traceDatasourceType"]; !set {
		// Span links open the trace in the data source of the store the traces come from.
		if u, err := out.TraceUpstream(); err == nil && u.Name == Tempo {
			out.Join.TraceDatasourceType = TraceDatasourceTempo
		}
	}
	bad.GPU = errors.Join(loadDCGM(j, &out.DCGM), loadClassify(j, &out.Classify), bad.Join)
	bad.Containers = loadContainers(j, &out.Containers)
	bad.Kernels = loadKernelTraces(j, s.DecryptedSecureJSONData, &out.Kernels)
	if out.NVMLEnabled, bad.NVML = j.boolean("nvmlEnabled"); bad.NVML != nil {
		bad.NVML = fmt.Errorf("%v: set it to true or false in the data source settings", bad.NVML)
	}
	var err error
	if out.SelfProfilingURL, err = j.str("selfProfilingUrl"); err == nil && out.SelfProfilingURL != "" {
		err = checkURL(out.SelfProfilingURL)
	}
	if err != nil {
		// Self-profiling is optional: a bad value turns it off rather than breaking queries.
		backend.Logger.Warn("self-profiling disabled: invalid selfProfilingUrl", "error", err)
		out.SelfProfilingURL = ""
	}
	return out, bad, nil
}

// validTraceStore checks jsonData.traceStore's value ("" lets the URLs choose).
func validTraceStore(v string) error {
	switch v {
	case "", TraceStoreJaeger, TraceStoreTempo:
		return nil
	}
	return fmt.Errorf("jsonData.traceStore must be jaeger or tempo, got %q: no trace is read until it is fixed", truncate(v, 40))
}

// loadMinStep reads jsonData.minStep, a duration as Grafana's Pyroscope data source stores it
// ("15s", "1m", "1h", also whole days and weeks: "1d", "1w"). Empty means DefaultMinStep.
func loadMinStep(j jsonFields) (time.Duration, error) {
	raw, err := j.str("minStep")
	if err != nil {
		return DefaultMinStep, fmt.Errorf("%v: set it to a duration such as 15s or 1m in the data source settings", err)
	}
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return DefaultMinStep, nil
	}
	d, err := parseStepDuration(raw)
	if err != nil || d <= 0 {
		return DefaultMinStep, fmt.Errorf("jsonData.minStep must be a positive duration such as 15s or 1m, got %q", truncate(raw, 40))
	}
	return d, nil
}

// parseStepDuration is time.ParseDuration plus Grafana's whole-day and whole-week suffixes (gtime
// accepts them; gtime itself is not used because it pulls in a date-math dependency).
func parseStepDuration(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			var v int64
			if _, err := fmt.Sscanf(n, "%d", &v); err != nil || fmt.Sprint(v) != n {
				return 0, fmt.Errorf("%q is not a whole number of %s", n, suffix)
			}
			return time.Duration(v) * unit, nil
		}
	}
	return time.ParseDuration(s)
}

func loadUpstream(name, key string, j jsonFields, secure map[string]string) (Upstream, error) {
	u := Upstream{Name: name, Key: key, Timeout: DefaultTimeout}
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	var err error
	u.URL, err = j.str(key + "Url")
	note(err)
	u.URL = strings.TrimRight(strings.TrimSpace(u.URL), "/")
	if u.URL != "" {
		note(checkURL(u.URL))
	}
	u.Auth, err = j.str(key + "Auth")
	note(err)
	if u.Auth == "" {
		u.Auth = AuthNone
	}
	u.User, err = j.str(key + "BasicAuthUser")
	note(err)
	u.Tenant, err = j.str(key + "Tenant")
	note(err)
	u.TLS.SkipVerify, err = j.boolean(key + "TlsSkipVerify")
	note(err)
	u.TLS.ServerName, err = j.str(key + "TlsServerName")
	note(err)
	secs, err := j.number(key + "TimeoutSeconds")
	note(err)
	if secs != 0 {
		d := time.Duration(secs * float64(time.Second))
		if d < time.Second || d > MaxTimeout {
			note(fmt.Errorf("%sTimeoutSeconds must be between 1 and %d, got %v", key, int(MaxTimeout.Seconds()), secs))
		} else {
			u.Timeout = d
		}
	}
	u.Password = secure[key+"BasicAuthPassword"]
	u.BearerToken = secure[key+"BearerToken"]
	u.TLS.CACert = secure[key+"TlsCACert"]
	u.TLS.ClientCert = secure[key+"TlsClientCert"]
	u.TLS.ClientKey = secure[key+"TlsClientKey"]

	switch u.Auth {
	case AuthNone:
	case AuthBasic:
		if u.User == "" {
			note(fmt.Errorf("%sAuth is basic but %sBasicAuthUser is empty", key, key))
		}
	case AuthBearer:
		if u.BearerToken == "" {
			note(fmt.Errorf("%sAuth is bearer but the token (secureJsonData.%sBearerToken) is not set", key, key))
		}
	default:
		note(fmt.Errorf("%sAuth must be one of none, basic, bearer; got %q", key, u.Auth))
	}
	if (u.TLS.ClientCert == "") != (u.TLS.ClientKey == "") {
		note(fmt.Errorf("TLS client authentication needs both %sTlsClientCert and %sTlsClientKey", key, key))
	}
	if len(errs) > 0 {
		return u, fmt.Errorf("invalid %s settings: %s", name, strings.Join(errs, "; "))
	}
	return u, nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("URL %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q must start with http:// or https://", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", raw)
	}
	if u.User != nil {
		// Credentials in the URL would end up in logs and spans; they belong in the auth settings.
		return fmt.Errorf("URL for %s must not contain a user or password; use the auth settings", u.Host)
	}
	return nil
}

// jsonFields reads typed values out of jsonData and names the field when its type is wrong.
type jsonFields map[string]json.RawMessage

func (j jsonFields) str(name string) (string, error) {
	var v string
	return v, j.decode(name, &v, "a string")
}

func (j jsonFields) boolean(name string) (bool, error) {
	var v bool
	return v, j.decode(name, &v, "true or false")
}

func (j jsonFields) number(name string) (float64, error) {
	var v float64
	if err := j.decode(name, &v, "a number"); err != nil {
		// Provisioning files often quote numbers; accept "30".
		var s string
		if json.Unmarshal(j[name], &s) == nil {
			if _, serr := fmt.Sscanf(strings.TrimSpace(s), "%g", &v); serr == nil {
				return v, nil
			}
		}
		return 0, err
	}
	return v, nil
}

func (j jsonFields) decode(name string, dst any, want string) error {
	raw, ok := j[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("jsonData.%s must be %s, got %s", name, want, truncate(string(raw), 40))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
