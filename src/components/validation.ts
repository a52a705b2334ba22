/**
 * The editor's early warnings. The backend validates every field again (pkg/models/query.go) and
 * has the last word; these only catch typos while the user is still looking at the field.
 * Anything holding a template variable is left alone: it is only known once interpolated.
 */

import { GPU_THRESHOLD_WINDOW_RANGE, QUERY_TYPE_INFO, UPSTREAM_TIMEOUT_SECONDS } from '../generated/vocabulary';

const VARIABLE = /\$\w+|\$\{[^}]+\}|\[\[[^\]]+\]\]/;

export const hasVariable = (s: string) => VARIABLE.test(s);

const hex = (s: string, n: number) => s.length === n && /^[0-9a-f]+$/i.test(s);

export function traceIdError(id = ''): string | undefined {
  const s = id.trim();
  if (s === '' || hasVariable(s) || hex(s, 16) || hex(s, 32)) {
    return undefined;
  }
  return 'A trace ID has 16 or 32 hex digits';
}

export function spanIdsError(ids: string[] = []): string | undefined {
  const bad = ids.find((id) => !hasVariable(id) && !hex(id.trim(), 16));
  return bad === undefined ? undefined : `"${bad}" is not a span ID (16 hex digits)`;
}

export function profileTypeError(id = ''): string | undefined {
  if (id === '' || hasVariable(id)) {
    return undefined;
  }
  const parts = id.split(':');
  return parts.length === 5 && parts.every((p) => p.trim() !== '')
    ? undefined
    : 'A profile type has five parts: name:sample_type:sample_unit:period_type:period_unit';
}

export function selectorError(selector = ''): string | undefined {
  const s = selector.trim();
  if (s === '' || hasVariable(s)) {
    return undefined;
  }
  if (!s.startsWith('{') || !s.endsWith('}')) {
    return 'A label selector looks like {service_name="api", env=~"prod.*"}';
  }
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && quoted) {
      i++;
    } else if (s[i] === '"') {
      quoted = !quoted;
    }
  }
  return quoted ? 'The label selector has an unclosed quote' : undefined;
}

/** Diff side ends: Unix milliseconds, now, or now minus a duration (now-1h, now-30m, now-2d). */
export function timeError(t = ''): string | undefined {
  const s = t.trim();
  if (s === '' || hasVariable(s) || /^\d+$/.test(s) || /^now(-(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+)?$/.test(s)) {
    return undefined;
  }
  return 'Unix milliseconds or a relative time: now, now-1h, now-2d';
}

const GO_DURATION = /^((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/;

/** Slow requests' minimum duration, as Go reads it (500ms, 1.5s, 1m30s), or plain milliseconds. */
export function durationError(d = ''): string | undefined {
  const s = d.trim();
  if (s === '' || hasVariable(s) || /^\d+(\.\d+)?$/.test(s) || GO_DURATION.test(s)) {
    return undefined;
  }
  return 'A duration like 500ms, 1.5s or 1m30s';
}

/** Everything the traceId and spanSelector fields of one query or diff side should say. */
export function requestErrors(traceId?: string, spanIds?: string[]) {
  return {
    traceId: traceIdError(traceId),
    spanSelector:
      spanIdsError(spanIds) ??
      (traceId && spanIds?.length
        ? 'Use either a trace ID or span IDs: a trace ID already selects its spans'
        : undefined),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const shorten = (s: string) => (s.length > 40 ? `${s.slice(0, 39)}…` : s);

/** The backend's bounds of the profile queries (pkg/models/querytypes.go). */
const PROFILE_BOUNDS = QUERY_TYPE_INFO.profile.bounds;
const MAX_PROFILE_IDS = PROFILE_BOUNDS.profileIdSelector.max;
const MAX_CALL_SITE_DEPTH = PROFILE_BOUNDS.stackTraceSelector.max;
const MAX_FUNCTION_NAME = PROFILE_BOUNDS.functionName.max;

/** What the flame graph keeps when maxNodes is unset, and the most it keeps. */
export const MAX_NODES = PROFILE_BOUNDS.maxNodes;

/**
 * Profile IDs (UUIDs, as Pyroscope's exemplars give them). They name the profiles themselves, so
 * a trace ID or span IDs beside them is a contradiction the backend refuses. Variables are not let
 * through: the data source does not replace them here (an empty one would widen the profile to
 * every request), so the backend would refuse them.
 */
export function profileIdsError(ids: string[] = [], traceId?: string, spanIds?: string[]): string | undefined {
  const bad = ids.find((id) => !UUID.test(id.trim()));
  if (bad !== undefined) {
    return `"${shorten(bad)}" is not a profile ID (a UUID such as 7c9e6679-7425-40de-944b-e07fc1f90ae7)`;
  }
  if (ids.length > MAX_PROFILE_IDS) {
    return `At most ${MAX_PROFILE_IDS} profile IDs, got ${ids.length}`;
  }
  if (ids.length && (traceId?.trim() || spanIds?.length)) {
    return 'Profile IDs already name the profiles: remove the trace ID and span IDs';
  }
  return undefined;
}

/** A call site: function names, root first, none empty. */
export function callSiteError(names: string[] = []): string | undefined {
  const empty = names.findIndex((n) => n.trim() === '');
  if (empty >= 0) {
    return `Function ${empty + 1} of the call site is empty: names, root first, separated by commas`;
  }
  if (names.length > MAX_CALL_SITE_DEPTH) {
    return `At most ${MAX_CALL_SITE_DEPTH} functions in a call site, got ${names.length}`;
  }
  const long = names.findIndex((n) => n.length > MAX_FUNCTION_NAME);
  return long >= 0 ? `Function ${long + 1} of the call site is longer than ${MAX_FUNCTION_NAME} characters` : undefined;
}

/** Whether a duration field as typed keeps only spans above zero (a variable is not known yet). */
const positiveDuration = (d = ''): boolean => {
  const s = d.trim();
  if (s === '' || hasVariable(s)) {
    return false;
  }
  return /^\d+(\.\d+)?$/.test(s) ? Number(s) > 0 : (durationMillis(s) ?? 0) > 0;
};

/**
 * Span profile's percentile: above 0 and below 100 (0 is unset, as the backend reads it), and not
 * beside a minimum duration: both pick the slowest spans.
 */
export function percentileError(p?: number, minDuration?: string): string | undefined {
  if (p === undefined || p === 0) {
    return undefined;
  }
  const { min, max } = QUERY_TYPE_INFO.spanProfile.bounds.percentile;
  if (Number.isNaN(p) || p <= min || p >= max) {
    return `Above ${min} and below ${max}, e.g. 95: the slowest 5% of spans`;
  }
  return positiveDuration(minDuration) ? 'Min duration and Percentile exclude each other: clear one' : undefined;
}

/** The slow tail's bound on the requests diagnosed. */
export const TAIL_TRACES = QUERY_TYPE_INFO.tail.bounds.maxTraces;

/** Requests a slow tail diagnoses: unset or 0 takes the default. */
export function tailTracesError(n?: number): string | undefined {
  return n === 0 ? undefined : rangeError(n, { ...TAIL_TRACES, whole: true });
}

/** The slow tail's threshold: one of percentile, min duration and the SLO. */
export function tailThresholdError(p?: number, minDuration?: string, slo?: boolean): string | undefined {
  const err = percentileError(p, minDuration);
  if (err) {
    return err;
  }
  const given = [p !== undefined && p !== 0, positiveDuration(minDuration), Boolean(slo)].filter(Boolean).length;
  return given > 1 ? 'Percentile, Min duration and SLO exclude each other: keep one' : undefined;
}

/** The span queries' bound on the traces read from Jaeger. */
export const SPAN_TRACES = QUERY_TYPE_INFO.spanHeatmap.bounds.limit;

/** Traces read by a span query: unset or 0 takes the default. */
export function spanLimitError(limit?: number): string | undefined {
  return limit === 0 ? undefined : rangeError(limit, { ...SPAN_TRACES, whole: true });
}

/** GPU kernels, diff view: the bound on the recent requests merged into the baseline. */
export const KERNEL_BASELINE_RECENT = QUERY_TYPE_INFO.kernels.bounds['baseline.recent'];

/**
 * GPU kernels, diff view: what is wrong with the baseline. recent: out of its bounds, or set beside
 * a trace ID; matchError: a glob the backend's path.Match refuses (an unclosed [).
 */
export function kernelBaselineErrors(b: { traceId?: string; recent?: number; match?: string }) {
  const both =
    b.traceId?.trim() && b.recent !== undefined ? 'A trace ID or recent requests, not both: clear one' : undefined;
  return {
    recent: rangeError(b.recent, { ...KERNEL_BASELINE_RECENT, whole: true }) ?? both,
    matchError: (m = '') => (hasVariable(m) || globClosed(m) ? undefined : 'A [ of the glob is not closed'),
  };
}

/** Whether each [ of a glob has its ] (a \ escapes the next character). */
function globClosed(m: string): boolean {
  let open = false;
  for (let i = 0; i < m.length; i++) {
    if (m[i] === '\\') {
      i++;
    } else if (m[i] === '[' && !open) {
      open = true;
    } else if (m[i] === ']' && open) {
      open = false;
    }
  }
  return !open;
}

/** How many of the slowest traces slowRequests lists. */
export const SLOW_TRACES = QUERY_TYPE_INFO.slowRequests.bounds.limit;

/*
 * Data source settings. The backend checks them again when it loads them (pkg/models/settings*.go)
 * and reports the key by name; these only say so on the settings page, next to the field.
 * Provisioning files can hold anything, so each takes what jsonData has and reads it as text.
 */

const text = (v: unknown) => (v === undefined || v === null ? '' : String(v)).trim();

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 36e5 };

/**
 * A settings duration in milliseconds, as the backend parses it: Go's time.ParseDuration (15s,
 * 1m30s, 1.5h) or a whole number of days or weeks (1d, 2w); undefined when it is neither.
 */
export function durationMillis(d: string): number | undefined {
  const s = d.trim();
  const days = /^(0|[1-9]\d*)([dw])$/.exec(s);
  if (days) {
    return Number(days[1]) * (days[2] === 'd' ? 864e5 : 6048e5);
  }
  if (s === '0') {
    return 0;
  }
  if (!GO_DURATION.test(s)) {
    return undefined;
  }
  let ms = 0;
  for (const [, n, unit] of s.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    ms += Number(n) * UNIT_MS[unit];
  }
  return ms;
}

/** minStep: a positive duration. */
export function stepError(d?: unknown): string | undefined {
  if (text(d) === '') {
    return undefined;
  }
  const ms = durationMillis(text(d));
  return ms !== undefined && ms > 0 ? undefined : 'A duration such as 15s, 1m or 1d';
}

/** The classification windows: whole seconds within the backend's bounds (1m to 7d). */
export function windowError(d?: unknown): string | undefined {
  if (text(d) === '') {
    return undefined;
  }
  const ms = durationMillis(text(d));
  if (ms === undefined) {
    return 'A duration such as 1h, 30m or 1d';
  }
  const { min, max, minText, maxText } = GPU_THRESHOLD_WINDOW_RANGE;
  return ms >= min && ms <= max && ms % 1000 === 0 ? undefined : `Whole seconds from ${minText} to ${maxText}`;
}

/** A number setting: undefined (unset) is fine; otherwise within [min, max] (min excluded when minOpen). */
export function rangeError(
  v: number | undefined,
  { min, max, minOpen, whole }: { min: number; max: number; minOpen?: boolean; whole?: boolean }
): string | undefined {
  if (v === undefined) {
    return undefined;
  }
  if (Number.isNaN(v) || v < min || v > max || (minOpen && v === min) || (whole && !Number.isInteger(v))) {
    const what = whole ? 'A whole number' : 'A number';
    return `${what} ${minOpen ? 'above' : 'from'} ${min} ${minOpen ? 'up to' : 'to'} ${max}`;
  }
  return undefined;
}

export const isLabelName = (s: string) => /^[a-zA-Z_][a-zA-Z0-9_]*$/.test(s);
export const isMetricName = (s: string) => /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(s);

export function labelNameError(s?: unknown): string | undefined {
  const v = text(s);
  if (v === '') {
    return undefined;
  }
  return isLabelName(v) && !v.startsWith('__') ? undefined : 'A label name: letters, digits and _ (e.g. Hostname)';
}

export function metricNameError(s?: unknown): string | undefined {
  const v = text(s);
  return v === '' || isMetricName(v) ? undefined : 'A metric name such as DCGM_FI_DEV_GPU_UTIL';
}

export function dashboardUidError(s?: unknown): string | undefined {
  const v = text(s);
  return v === '' || /^[a-zA-Z0-9\-_]{1,40}$/.test(v)
    ? undefined
    : 'A dashboard UID: letters, digits, - and _, at most 40';
}

export function attributeError(s?: unknown): string | undefined {
  return text(s).length > 200 ? 'At most 200 characters' : undefined;
}

/**
 * Parses the latency histograms text area: a non-empty JSON list of {metric, serviceLabels,
 * endpointLabel}, checked as the backend checks it. Returns the list or why it is not one.
 */
export function parseLatencyHistograms(
  text: string
): { value: Array<{ metric: string; serviceLabels: string[]; endpointLabel: string }> } | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { error: `Not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    return { error: 'A non-empty list: [{"metric": ..., "serviceLabels": [...], "endpointLabel": ...}]' };
  }
  const out = [];
  for (const [i, item] of parsed.entries()) {
    const at = `Histogram ${i + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { error: `${at}: an object with metric, serviceLabels and endpointLabel` };
    }
    const { metric, serviceLabels, endpointLabel } = item as Record<string, unknown>;
    const name = typeof metric === 'string' ? metric.trim().replace(/_bucket$/, '') : '';
    if (!isMetricName(name)) {
      return { error: `${at}: "metric" must be a Prometheus metric name (the histogram, without _bucket)` };
    }
    if (
      !Array.isArray(serviceLabels) ||
      serviceLabels.length === 0 ||
      !serviceLabels.every((l) => typeof l === 'string' && isLabelName(l.trim()))
    ) {
      return { error: `${at}: "serviceLabels" must list one or more label names, e.g. ["service_name", "job"]` };
    }
    if (typeof endpointLabel !== 'string' || !isLabelName(endpointLabel.trim()) || endpointLabel.trim() === 'le') {
      return { error: `${at}: "endpointLabel" must be a label name other than le, e.g. "http_route"` };
    }
    out.push({ metric: metric as string, serviceLabels: serviceLabels as string[], endpointLabel });
  }
  return { value: out };
}

/**
 * An upstream's URL (and the self-profiling one), as the backend checks it (checkURL in
 * pkg/models/settings.go): http or https, a host, and no user or password in it.
 */
export function urlError(u?: unknown, example = 'http://localhost:4040'): string | undefined {
  const s = text(u);
  if (s === '') {
    return undefined;
  }
  if (!/^https?:\/\//i.test(s)) {
    return `Start with http:// or https://, e.g. ${example}`;
  }
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return `Not a URL: write it like ${example}`;
  }
  if (url.username || url.password) {
    return 'No user or password in the URL: see Authentication';
  }
  return undefined;
}

/** An upstream's timeout in seconds, within the backend's bounds (UPSTREAM_TIMEOUT_SECONDS). */
export function timeoutError(v?: unknown): string | undefined {
  if (text(v) === '') {
    return undefined;
  }
  const { min, max } = UPSTREAM_TIMEOUT_SECONDS;
  const n = Number(text(v));
  return Number.isFinite(n) && n >= min && n <= max ? undefined : `Seconds from ${min} to ${max}`;
}
