import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import {
  CADVISOR_LABEL_ROLES,
  DCGM_LABEL_ALIASES,
  DEFAULT_ALLOC_TYPE,
  DEFAULT_LATENCY_HISTOGRAMS as GENERATED_LATENCY_HISTOGRAMS,
  DEFAULT_PROFILE_TYPE,
  GPU_AGGREGATIONS,
  GPU_CATALOGUE,
  GPU_LOCAL_VIEWS,
  GPU_METRIC_NAMES,
  GPU_THRESHOLD_WINDOWS,
  GPU_THRESHOLDS,
  KERNELS_VIEWS,
  QUERY_TYPE_INFO,
  QUERY_TYPE_NAMES,
  TRACE_DATASOURCE_TYPES as GENERATED_TRACE_DATASOURCE_TYPES,
  TRIAGE_CLASSES,
  TRACE_PARTS,
  SLOW_REQUESTS_PARTS,
  TAIL_PARTS,
  TRIAGE_VIEWS,
} from './generated/vocabulary';

/**
 * Query types the editor offers, in picker order, as the backend declares them
 * (pkg/models/querytypes.go): label, description, family, fields and bounds.
 */
export const QUERY_TYPES = QUERY_TYPE_NAMES.map((value) => ({ value, ...QUERY_TYPE_INFO[value] }));

export type QueryType = (typeof QUERY_TYPE_NAMES)[number];

/** The editor's groups of query types: the types of a family share fields. */
export type QueryFamily = (typeof QUERY_TYPE_INFO)[QueryType]['family'];

/** The query type's family; an unknown type (a dashboard's typo) belongs to none. */
export const queryFamily = (t: QueryType): QueryFamily | undefined => QUERY_TYPE_INFO[t]?.family;

export { DEFAULT_ALLOC_TYPE, DEFAULT_PROFILE_TYPE };

/** What the gpu-label-values resource lists: hosts, GPUs (index or UUID), models, pods, namespaces. */
export type GpuRole = 'host' | 'gpu' | 'model' | 'pod' | 'namespace';

/**
 * Local GPUs: what the gpuLocal query shows of the Grafana host's GPUs (pkg/models/gpu_local_query.go,
 * GPULocalViews); unset: devices.
 */
export type GpuLocalView = (typeof GPU_LOCAL_VIEWS)[number];

/**
 * GPU incidents (triage): one row per failure (the default), per failed request, or what each
 * class reads (pkg/models/triage_query.go, TriageViews).
 */
export type TriageView = (typeof TRIAGE_VIEWS)[number];

/**
 * GPU kernels: each trace file's kernel summary and breakdowns (the default), its per-launch
 * times and ranges projected onto the GPU, its critical path, its activities as a trace for
 * Grafana's trace view, or its kernels against a baseline's (pkg/models/kernels_query.go, KernelsViews).
 */
export type KernelsView = (typeof KERNELS_VIEWS)[number];

/**
 * GPU kernels, diff view: what the request's kernels are compared with. Another request
 * (traceId), or the `recent` most recent requests (1–100, default 10) whose trace file references
 * match `match`, a glob (`infer_*` on the file name; with a `/`, on the whole reference, e.g.
 * `bucket:fleet/infer/2026-11-2?/infer_*`); unset: the target's directory, any day, its name before the trace ID.
 */
export interface KernelBaseline {
  traceId?: string;
  recent?: number;
  match?: string;
}

/** GPU incidents (triage): the failure classes of runbook 002 (TriageClasses). */
export type TriageClass = (typeof TRIAGE_CLASSES)[number];
export type TracePart = (typeof TRACE_PARTS)[number];
export type SlowRequestsPart = (typeof SLOW_REQUESTS_PARTS)[number];
export type TailPart = (typeof TAIL_PARTS)[number];

/**
 * The views of the query types that have a view field: each type's parser refuses the others',
 * so a view is only carried over to a type that has it.
 */
export const QUERY_VIEWS: Partial<Record<QueryType, readonly string[]>> = {
  gpuLocal: GPU_LOCAL_VIEWS,
  triage: TRIAGE_VIEWS,
  kernels: KERNELS_VIEWS,
};

/** GPU metrics: one series per GPU, per host, or one for the fleet. */
export type GpuAggregation = (typeof GPU_AGGREGATIONS)[number];

/** One side of a diff; unset fields take the query's label selector and the panel's time range. */
export interface DiffSide {
  /** Unix milliseconds or relative: now-1h, now. */
  from?: string;
  to?: string;
  labelSelector?: string;
  spanSelector?: string[];
  traceId?: string;
}

/**
 * One panel query, as the backend reads it (pkg/models/query.go). Field names for profiles are
 * those of Grafana's Pyroscope data source, so its dashboards and the trace-to-profile link work
 * when pointed at this plugin; the rest are this plugin's own.
 */
export interface HsiQuery extends DataQuery {
  queryType?: QueryType;
  labelSelector?: string;
  /** The profile shown; span heatmap: the one its slowest spans link to. */
  profileTypeId?: string;
  maxNodes?: number;
  /** Span IDs (16 hex digits each). */
  spanSelector?: string[];
  groupBy?: string[];
  /**
   * Metrics: keep the top N series; 0 or unset: all. Slow requests: the N slowest traces. Span
   * heatmap and profile: traces read from the trace store's search (Jaeger or Tempo) (default 500, at most 1500).
   */
  limit?: number;
  /** The whole request, across services (profile, trace): 16 or 32 hex digits. */
  traceId?: string;
  /** With traceId: also one flame graph per service. */
  perService?: boolean;
  /** Diff: the baseline side. GPU kernels, diff view: the request or recent requests compared with. */
  baseline?: DiffSide & KernelBaseline;
  comparison?: DiffSide;

  // Grafana's Pyroscope data source's fields, with its meanings (GrafanaPyroscopeDataQuery).
  /** Metrics, both: exemplar markers, the individual profiles behind each point (Pyroscope 1.17+). */
  includeExemplars?: boolean;
  /** Metrics, both: a heatmap of individual profiles' or spans' values instead of series (Pyroscope 1.19+). */
  includeHeatmap?: boolean;
  /** With includeHeatmap: each individual profile (unset, Grafana's default) or each span. */
  heatmapType?: 'individual' | 'span';
  /** Metrics, both: Pyroscope's ingestion annotations (throttling, sampling). */
  annotations?: boolean;
  /** Profile, both: only these individual profiles (UUIDs, e.g. from an exemplar); not with spanSelector or traceId. */
  profileIdSelector?: string[];
  /** Profile, both: only the stacks under this call site, function names, root first. */
  stackTraceSelector?: string[];
  /** Grafana's list form of traceId: one trace ID means the same. */
  traceIdSelector?: string[];
  /** Profile, metrics, both, diff: keep whole stacks by function name (Pyroscope's frame_filter; RE2 regexes). */
  frameFilter?: {
    includeFunctionNames?: string[];
    excludeFunctionNames?: string[];
    includeFunctionNameRegexes?: string[];
    excludeFunctionNameRegexes?: string[];
  };

  /** Trace: the allocation profile type of each span (profileTypeId is its CPU one). */
  allocTypeId?: string;
  /**
   * Trace, slow requests: the parts of the answer to return, one frame each; unset: all (a table
   * panel asks for its own, and shows no frame picker).
   */
  parts?: Array<TracePart | SlowRequestsPart | TailPart>;
  /**
   * Slow requests: the trace store's service (all when unset), an endpoint (operation) and a Go duration,
   * e.g. 500ms. Span heatmap and profile: the service (required) and the spans at least this long,
   * a Go duration or milliseconds.
   */
  service?: string;
  endpoint?: string;
  minDuration?: string;
  /** Span heatmap and profile: the span name; unset: every operation of the service. */
  operation?: string;
  /**
   * Span profile: the spans at or above this percentile of the operation's durations (above 0,
   * below 100); not with minDuration. Slow tail: the tail's threshold (default 95).
   */
  percentile?: number;
  /** Slow tail: the requests over the data source's latency SLO (latencyYellowMs) are the tail. */
  slo?: boolean;
  /** Slow tail: how many tail requests are diagnosed, the newest first (default 20). */
  maxTraces?: number;
  /** GPU metrics: names from the gpu-metrics catalogue. */
  metrics?: string[];
  aggregation?: GpuAggregation;
  /** GPU metrics, class and triage: label filters, each item a value or a variable (GPU index or UUID). */
  hosts?: string[];
  gpus?: string[];
  models?: string[];
  pods?: string[];
  namespaces?: string[];
  /**
   * Local GPUs (NVML): the view; unset: devices. Triage: the view; unset: failures. GPU kernels:
   * the view; unset: summary.
   */
  view?: GpuLocalView | TriageView | KernelsView;
  /** Triage: the trace store's services searched for failed requests; unset: every service. */
  services?: string[];
  /**
   * Triage: only these failure classes; unset: all. (GPU class queries take the same key for the
   * workload classes whose shares to answer, written in alert rules' JSON, not in this editor.)
   */
  classes?: TriageClass[];
  /** GPU kernels: a trace file, relative to a configured trace directory (else found by traceId). */
  file?: string;
}

/** One trace file of the kernel-files resource. */
export interface KernelFile {
  file: string;
  size: number;
  modified: string;
  traceIds: string[];
}

export const DEFAULT_QUERY: Partial<HsiQuery> = {
  queryType: 'profile',
  labelSelector: '{}',
  profileTypeId: DEFAULT_PROFILE_TYPE,
};

export const UPSTREAMS = [
  { key: 'pyroscope', name: 'Pyroscope', placeholder: 'http://localhost:4040', tenant: true },
  { key: 'prometheus', name: 'Prometheus', placeholder: 'http://localhost:9090', tenant: true },
  { key: 'jaeger', name: 'Jaeger', placeholder: 'http://localhost:16686', tenant: false },
  { key: 'tempo', name: 'Tempo', placeholder: 'http://localhost:3200', tenant: true },
] as const;

/** jsonData.traceStore: which trace store the trace-reading queries ask (pkg/models/settings.go). */
export type TraceStore = 'jaeger' | 'tempo';

/**
 * The trace store the backend reads: the one jsonData.traceStore names, else the one whose URL is
 * set, Jaeger when both are (models.Settings.TraceUpstream).
 */
export function chosenTraceStore(j: { traceStore?: TraceStore; jaegerUrl?: string; tempoUrl?: string }): TraceStore {
  if (j.traceStore === 'jaeger' || j.traceStore === 'tempo') {
    return j.traceStore;
  }
  return (j.tempoUrl ?? '').trim() !== '' && (j.jaegerUrl ?? '').trim() === '' ? 'tempo' : 'jaeger';
}

export type UpstreamKey = (typeof UPSTREAMS)[number]['key'];
export type AuthKind = 'none' | 'basic' | 'bearer';

/** Per-upstream jsonData fields are prefixed with the upstream's key: pyroscopeUrl, jaegerAuth, ... */
type UpstreamJsonData = {
  [K in UpstreamKey as `${K}Url`]?: string;
} & { [K in UpstreamKey as `${K}Auth`]?: AuthKind } & {
  [K in UpstreamKey as `${K}BasicAuthUser`]?: string;
} & { [K in UpstreamKey as `${K}Tenant`]?: string } & {
  [K in UpstreamKey as `${K}TlsSkipVerify`]?: boolean;
} & { [K in UpstreamKey as `${K}TlsServerName`]?: string } & {
  [K in UpstreamKey as `${K}TimeoutSeconds`]?: number;
};

export { GPU_METRIC_NAMES };

/** Catalogue entries computed from others, with what they combine: they have no metric of their own to rename. */
export const COMPUTED_GPU_METRICS: Record<string, string> = Object.fromEntries(
  GPU_CATALOGUE.filter((m) => m.computedFrom.length > 0).map((m) => [m.name, m.computedFrom.join(' and ')])
);

/** How the settings page names each role of jsonData.dcgmLabelNames. */
const DCGM_ROLE_TEXT: Record<keyof typeof DCGM_LABEL_ALIASES, { label: string; what: string }> = {
  host: { label: 'Host', what: 'host name' },
  gpu: { label: 'GPU index', what: 'GPU index' },
  uuid: { label: 'GPU UUID', what: 'GPU UUID' },
  model: { label: 'Model', what: 'GPU model' },
  pod: { label: 'Pod', what: 'Kubernetes pod' },
  namespace: { label: 'Namespace', what: 'Kubernetes namespace' },
  container: { label: 'Container', what: 'container' },
  mig: { label: 'MIG instance', what: 'MIG instance ID' },
};

/**
 * The roles of jsonData.dcgmLabelNames in the backend's order, with the label names it tries when
 * the role is not set.
 */
export const DCGM_LABEL_ROLES = (Object.keys(DCGM_LABEL_ALIASES) as Array<keyof typeof DCGM_LABEL_ALIASES>).map(
  (role) => ({ role, ...DCGM_ROLE_TEXT[role], aliases: DCGM_LABEL_ALIASES[role] })
);

export type DcgmLabelRole = keyof typeof DCGM_LABEL_ALIASES;

/**
 * jsonData.gpuThresholds (pkg/models/settings_classify.go): numbers, and two windows as Go
 * durations ("24h"). A missing key takes its default. Provisioning files may quote numbers.
 */
export type GpuThresholds = { [K in keyof typeof GPU_THRESHOLDS]?: number } & {
  [K in keyof typeof GPU_THRESHOLD_WINDOWS]?: string;
};

/** One request-duration histogram of the slowRequests query (pkg/models/settings_join.go). */
export interface LatencyHistogram {
  /** The histogram's name, without _bucket. */
  metric: string;
  /** The labels naming the service; the first one a series has wins. */
  serviceLabels: string[];
  endpointLabel: string;
}

/** What slowRequests reads when jsonData.latencyHistograms is unset. */
export const DEFAULT_LATENCY_HISTOGRAMS: LatencyHistogram[] = GENERATED_LATENCY_HISTOGRAMS;

/** The trace data sources span links can open: their query models differ. */
export type TraceDatasourceType = (typeof GENERATED_TRACE_DATASOURCE_TYPES)[number];
export const TRACE_DATASOURCE_TYPES: TraceDatasourceType[] = [...GENERATED_TRACE_DATASOURCE_TYPES];

/**
 * Every key beyond the upstreams, as the backend reads it (pkg/models/settings*.go). Unset keys
 * take the defaults named here; the settings page removes a key rather than storing an empty one.
 */
interface BehaviourJsonData {
  /** Pyroscope to push the plugin's own profiles to; empty: off. */
  selfProfilingUrl?: string;
  /** Smallest step of metrics queries, a duration (default 15s). */
  minStep?: string;

  /** Most series one GPU query returns (1–10000, default 500). */
  gpuMaxSeries?: number;
  /** Catalogue name → the metric to read instead of the known DCGM names. */
  dcgmMetricNames?: Record<string, string>;
  /** Role → the one label that carries it (default: detected among the usual names). */
  dcgmLabelNames?: Partial<Record<DcgmLabelRole, string>>;
  /** The PCIe link of the GPUs (default Gen4 ×16). */
  pcieGeneration?: number;
  pcieWidth?: number;
  gpuThresholds?: GpuThresholds;

  /** cAdvisor metric (CADVISOR_METRICS) → the metric to read instead (a recording rule's copy). */
  cadvisorMetricNames?: Record<string, string>;
  /** namespace, pod, container → the label of cAdvisor's series that carries it (default: the kubelet's). */
  cadvisorLabelNames?: Partial<Record<(typeof CADVISOR_LABEL_ROLES)[number], string>>;

  /** The gpuLocal query: the Grafana host's GPUs through NVML (default off; the key is removed when off). */
  nvmlEnabled?: boolean;

  /** GPU kernel traces: absolute, read-only directories searched for trace files. */
  traceDirectories?: string[];
  /** Files larger than this are skipped (default 2 GiB). */
  traceMaxFileBytes?: number;
  /** Trace files looked at per query (default 10000). */
  traceMaxFiles?: number;
  /** GPU kernel traces in object storage, read beside the directories (at most 16). */
  kernelBuckets?: KernelBucket[];

  /** Span resource attribute naming the host (default host.name). */
  joinHostAttribute?: string;
  /** Span attribute naming the GPU, by index or UUID (default gpu.index). */
  joinGpuAttribute?: string;
  /** Span host → DCGM host label value; hosts not listed map to themselves. */
  joinHostMap?: Record<string, string>;
  /** The trace data source span links open in Explore; unset: no trace links. */
  traceDatasourceUid?: string;
  traceDatasourceType?: TraceDatasourceType;
  /** Which of Jaeger and Tempo the trace-reading queries ask; unset: the one whose URL is set. */
  traceStore?: TraceStore;
  /** Dashboards the GPU and slow-trace links open (default hsi-gpu-metrics, hsi-request-profiling). */
  gpuDashboardUid?: string;
  requestDashboardUid?: string;

  /** slowRequests colour thresholds in milliseconds (default 500 and 1000). */
  latencyYellowMs?: number;
  latencyRedMs?: number;
  /** slowRequests histograms (default DEFAULT_LATENCY_HISTOGRAMS). */
  latencyHistograms?: LatencyHistogram[];
}

export interface HsiOptions extends DataSourceJsonData, UpstreamJsonData, BehaviourJsonData {}

export type BucketProvider = 's3' | 'gcs' | 'azure' | 'filesystem';

/** One bucket of jsonData.kernelBuckets (pkg/models/settings_buckets.go); credentials are secrets. */
export interface KernelBucket {
  name: string;
  provider: BucketProvider;
  /** The bucket (s3, gcs) or container (azure). */
  bucket?: string;
  prefix?: string;
  /** s3: host[:port] of an S3-compatible store; azure: the endpoint suffix. */
  endpoint?: string;
  region?: string;
  /** azure: the storage account. */
  account?: string;
  /** s3: plain HTTP. */
  insecure?: boolean;
  /** filesystem: an absolute directory. */
  directory?: string;
  /** One listing, object's attributes or open: 1 to 300 seconds (unset: 30). */
  timeoutSeconds?: number;
}

/** A bucket's credential, under secureJsonData's kernelBucket.<name>.<credential>. */
export type BucketCredential = 'accessKey' | 'secretKey' | 'serviceAccount' | 'storageAccountKey';

/** Secrets: stored encrypted by Grafana, sent only to the backend, never back to the browser. */
export type HsiSecureJsonData = { [K in `kernelBucket.${string}`]?: string } & {
  [K in UpstreamKey as `${K}BasicAuthPassword`]?: string;
} & { [K in UpstreamKey as `${K}BearerToken`]?: string } & {
  [K in UpstreamKey as `${K}TlsCACert`]?: string;
} & { [K in UpstreamKey as `${K}TlsClientCert`]?: string } & {
  [K in UpstreamKey as `${K}TlsClientKey`]?: string;
};

export interface ProfileType {
  id: string;
  name: string;
  sampleType: string;
  sampleUnit: string;
}

/** A recent trace, as the `traces` resource lists them. */
export interface TraceSummary {
  traceId: string;
  rootService: string;
  rootOperation: string;
  start: number;
  durationMs: number;
  spans: number;
  services: string[];
}

/** One series of the gpu-metrics catalogue. */
export interface GpuMetric {
  name: string;
  description: string;
  unit: string;
}

export interface TraceSearch {
  service: string;
  operation?: string;
  /** A Go duration, as Jaeger and Grafana write them, e.g. 500ms. */
  minDuration?: string;
  limit?: number;
}
