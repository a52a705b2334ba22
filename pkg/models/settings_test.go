package models

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// loaded is a data source's settings and what of them is invalid.
type loaded struct {
	*Settings
	bad Invalid
}

func load(t *testing.T, jsonData string, secure map[string]string) loaded {
	t.Helper()
	s, bad, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(jsonData), DecryptedSecureJSONData: secure})
	if err != nil {
		t.Fatalf("LoadSettings: %v", err)
	}
	return loaded{s, bad}
}

func TestLoadSettingsReadsEachUpstreamWithItsOwnAuth(t *testing.T) {
	s := load(t, `{
		"pyroscopeUrl": "http://pyro:4040/", "pyroscopeTenant": "team-a", "pyroscopeAuth": "basic", "pyroscopeBasicAuthUser": "u",
		"prometheusUrl": "https://prom:9090", "prometheusAuth": "bearer", "prometheusTimeoutSeconds": "12", "prometheusTlsSkipVerify": true,
		"jaegerUrl": "http://jaeger:16686"
	}`, map[string]string{"pyroscopeBasicAuthPassword": "pw", "prometheusBearerToken": "tok"})

	if s.Pyroscope.URL != "http://pyro:4040" || s.Pyroscope.Tenant != "team-a" || s.Pyroscope.Auth != AuthBasic ||
		s.Pyroscope.User != "u" || s.Pyroscope.Password != "pw" || s.bad.Upstream(Pyroscope) != nil {
		t.Errorf("pyroscope = %+v", s.Pyroscope)
	}
	if s.Prometheus.Auth != AuthBearer || s.Prometheus.BearerToken != "tok" || s.Prometheus.Timeout != 12*time.Second ||
		!s.Prometheus.TLS.SkipVerify || s.bad.Upstream(Prometheus) != nil {
		t.Errorf("prometheus = %+v", s.Prometheus)
	}
	if s.Jaeger.Auth != AuthNone || s.Jaeger.Timeout != DefaultTimeout || s.bad.Upstream(Jaeger) != nil {
		t.Errorf("jaeger = %+v", s.Jaeger)
	}
}

func TestLoadSettingsLeavesUnsetUpstreamsUnconfigured(t *testing.T) {
	s := load(t, `{"jaegerUrl": "http://jaeger:16686"}`, nil)
	if s.Pyroscope.Configured() || s.Prometheus.Configured() || !s.Jaeger.Configured() {
		t.Errorf("configured: pyroscope %v prometheus %v jaeger %v", s.Pyroscope.Configured(), s.Prometheus.Configured(), s.Jaeger.Configured())
	}
}

func TestLoadSettingsNamesTheWrongFieldAndKeepsOtherUpstreams(t *testing.T) {
	cases := []struct {
		name, jsonData string
		secure         map[string]string
		want           string
	}{
		{"not a URL scheme", `{"pyroscopeUrl": "pyro:4040"}`, nil, "must start with http:// or https://"},
		{"credentials in URL", `{"pyroscopeUrl": "http://user:secret@pyro:4040"}`, nil, "must not contain a user or password"},
		{"unknown auth", `{"pyroscopeUrl": "http://p", "pyroscopeAuth": "oauth"}`, nil, `pyroscopeAuth must be one of none, basic, bearer; got "oauth"`},
		{"basic without user", `{"pyroscopeUrl": "http://p", "pyroscopeAuth": "basic"}`, nil, "pyroscopeBasicAuthUser is empty"},
		{"bearer without token", `{"pyroscopeUrl": "http://p", "pyroscopeAuth": "bearer"}`, nil, "secureJsonData.pyroscopeBearerToken"},
		{"timeout type", `{"pyroscopeUrl": "http://p", "pyroscopeTimeoutSeconds": true}`, nil, "jsonData.pyroscopeTimeoutSeconds must be a number, got true"},
		{"timeout range", `{"pyroscopeUrl": "http://p", "pyroscopeTimeoutSeconds": 0.5}`, nil, "pyroscopeTimeoutSeconds must be between 1 and 300"},
		{"url type", `{"pyroscopeUrl": 42}`, nil, "jsonData.pyroscopeUrl must be a string, got 42"},
		{"half a client cert", `{"pyroscopeUrl": "http://p"}`, map[string]string{"pyroscopeTlsClientCert": "x"}, "needs both pyroscopeTlsClientCert and pyroscopeTlsClientKey"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := load(t, strings.Replace(c.jsonData, "{", `{"jaegerUrl": "http://jaeger:16686", `, 1), c.secure)
			if s.bad.Upstream(Pyroscope) == nil || !strings.Contains(s.bad.Upstream(Pyroscope).Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", s.bad.Upstream(Pyroscope), c.want)
			}
			if !strings.HasPrefix(s.bad.Upstream(Pyroscope).Error(), "invalid Pyroscope settings: ") {
				t.Errorf("error does not name the upstream: %v", s.bad.Upstream(Pyroscope))
			}
			if s.bad.Upstream(Jaeger) != nil || !s.Jaeger.Configured() {
				t.Errorf("jaeger should stay usable, got %+v", s.Jaeger)
			}
		})
	}
}

func TestLoadSettingsErrorsNeverContainSecrets(t *testing.T) {
	s := load(t, `{"pyroscopeUrl": "http://p", "pyroscopeAuth": "basic", "pyroscopeTlsSkipVerify": "yes"}`,
		map[string]string{"pyroscopeBasicAuthPassword": "hunter2-secret", "pyroscopeTlsClientCert": "CERT-secret"})
	if s.bad.Upstream(Pyroscope) == nil {
		t.Fatal("expected an error")
	}
	if strings.Contains(s.bad.Upstream(Pyroscope).Error(), "secret") {
		t.Errorf("error leaks a secret: %v", s.bad.Upstream(Pyroscope))
	}
}

func TestLoadSettingsRejectsNonObjectJSONData(t *testing.T) {
	_, _, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`[1,2]`)})
	if err == nil || !strings.Contains(err.Error(), "jsonData") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadSettingsIgnoresInvalidSelfProfilingURL(t *testing.T) {
	s := load(t, `{"selfProfilingUrl": "not a url"}`, nil)
	if s.SelfProfilingURL != "" {
		t.Errorf("SelfProfilingURL = %q, want it off", s.SelfProfilingURL)
	}
	s = load(t, `{"selfProfilingUrl": "http://pyroscope:4040"}`, nil)
	if s.SelfProfilingURL != "http://pyroscope:4040" {
		t.Errorf("SelfProfilingURL = %q", s.SelfProfilingURL)
	}
}

func TestLoadSettingsReadsMinStepAsGrafanasPyroscopeDataSource(t *testing.T) {
	cases := map[string]time.Duration{
		`{}`:                   DefaultMinStep,
		`{"minStep": ""}`:      DefaultMinStep,
		`{"minStep": null}`:    DefaultMinStep,
		`{"minStep": "30s"}`:   30 * time.Second,
		`{"minStep": " 1m "}`:  time.Minute,
		`{"minStep": "250ms"}`: 250 * time.Millisecond,
		`{"minStep": "1d"}`:    24 * time.Hour,
		`{"minStep": "2w"}`:    14 * 24 * time.Hour,
	}
	for jsonData, want := range cases {
		s := load(t, jsonData, nil)
		if s.MinStep != want || s.bad.MinStep != nil {
			t.Errorf("%s: minStep = %v (err %v), want %v", jsonData, s.MinStep, s.bad.MinStep, want)
		}
	}
}

func TestLoadSettingsNamesAnInvalidMinStepAndKeepsTheUpstreams(t *testing.T) {
	cases := map[string]string{
		`{"minStep": "fast"}`: `jsonData.minStep must be a positive duration such as 15s or 1m, got "fast"`,
		`{"minStep": "0s"}`:   `jsonData.minStep must be a positive duration such as 15s or 1m, got "0s"`,
		`{"minStep": "-5s"}`:  `got "-5s"`,
		`{"minStep": 15}`:     "jsonData.minStep must be a string, got 15",
		`{"minStep": "1.5d"}`: `got "1.5d"`,
	}
	for jsonData, want := range cases {
		s := load(t, strings.Replace(jsonData, "{", `{"pyroscopeUrl": "http://pyro:4040", `, 1), nil)
		if s.bad.MinStep == nil || !strings.Contains(s.bad.MinStep.Error(), want) {
			t.Errorf("%s: error = %v, want it to contain %q", jsonData, s.bad.MinStep, want)
		}
		if s.MinStep != DefaultMinStep {
			t.Errorf("%s: minStep = %v, want the default kept alongside the error", jsonData, s.MinStep)
		}
		if s.bad.Upstream(Pyroscope) != nil || !s.Pyroscope.Configured() {
			t.Errorf("%s: an invalid minStep must not disable Pyroscope: %+v", jsonData, s.Pyroscope)
		}
	}
}

// The trace store is the one whose URL is set, Jaeger when both are unless jsonData.traceStore
// chooses; a choice that cannot be used says what to set, and span links follow Tempo.
func TestTraceUpstreamChoosesTheStoreTracesAreReadFrom(t *testing.T) {
	const jaegerURL, tempoURL = `"jaegerUrl": "http://jaeger:16686"`, `"tempoUrl": "http://tempo:3200"`
	for _, tc := range []struct {
		name, jsonData, want, wantErr, linkType string
	}{
		{name: "only Jaeger", jsonData: `{` + jaegerURL + `}`, want: Jaeger, linkType: TraceDatasourceJaeger},
		{name: "only Tempo", jsonData: `{` + tempoURL + `}`, want: Tempo, linkType: TraceDatasourceTempo},
		{name: "both, unset", jsonData: `{` + jaegerURL + `,` + tempoURL + `}`, want: Jaeger, linkType: TraceDatasourceJaeger},
		{name: "both, tempo chosen", jsonData: `{` + jaegerURL + `,` + tempoURL + `, "traceStore": " Tempo "}`, want: Tempo, linkType: TraceDatasourceTempo},
		{name: "both, jaeger chosen", jsonData: `{` + jaegerURL + `,` + tempoURL + `, "traceStore": "jaeger"}`, want: Jaeger, linkType: TraceDatasourceJaeger},
		{name: "tempo chosen, links kept", jsonData: `{` + tempoURL + `, "traceDatasourceType": "jaeger"}`, want: Tempo, linkType: TraceDatasourceJaeger},
		{name: "neither", jsonData: `{}`, linkType: TraceDatasourceJaeger, wantErr: "the trace store is not configured: set Jaeger's URL (jsonData.jaegerUrl) or Tempo's (jsonData.tempoUrl)"},
		{name: "chosen one not set", jsonData: `{` + jaegerURL + `, "traceStore": "tempo"}`, linkType: TraceDatasourceJaeger, wantErr: "jsonData.traceStore is tempo, but Tempo is not configured: set its URL (jsonData.tempoUrl)"},
		{name: "unknown store", jsonData: `{` + jaegerURL + `, "traceStore": "zipkin"}`, linkType: TraceDatasourceJaeger, wantErr: `jsonData.traceStore must be jaeger or tempo, got "zipkin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := load(t, tc.jsonData, nil)
			u, err := s.TraceUpstream()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("TraceUpstream() = %v, %v; want the error %q", u, err, tc.wantErr)
				}
			case err != nil || u.Name != tc.want:
				t.Errorf("TraceUpstream() = %+v, %v; want %s", u, err, tc.want)
			}
			if s.Join.TraceDatasourceType != tc.linkType {
				t.Errorf("span links open %q traces, want %q", s.Join.TraceDatasourceType, tc.linkType)
			}
			if strings.Contains(tc.name, "unknown") != (s.bad.TraceStore != nil) {
				t.Errorf("invalid traceStore = %v", s.bad.TraceStore)
			}
		})
	}
}

func TestLoadSettingsReadsTempoAsAnUpstreamWithTenant(t *testing.T) {
	s := load(t, `{"tempoUrl": "https://tempo.example/", "tempoTenant": "team-a", "tempoAuth": "bearer", "tempoTimeoutSeconds": 20}`,
		map[string]string{"tempoBearerToken": "tok"})
	if s.Tempo.URL != "https://tempo.example" || s.Tempo.Tenant != "team-a" || s.Tempo.BearerToken != "tok" ||
		s.Tempo.Timeout != 20*time.Second || s.bad.Upstream(Tempo) != nil {
		t.Errorf("tempo = %+v, invalid %v", s.Tempo, s.bad.Upstream(Tempo))
	}
	if bad := load(t, `{"tempoUrl": "tempo:3200"}`, nil).bad.Upstream(Tempo); bad == nil || !strings.Contains(bad.Error(), "invalid Tempo settings") {
		t.Errorf("a Tempo URL without a scheme: %v", bad)
	}
}
