import {
  CoreApp,
  DataSourceInstanceSettings,
  LegacyMetricFindQueryOptions,
  MetricFindValue,
  ScopedVars,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import {
  DEFAULT_QUERY,
  DiffSide,
  GpuMetric,
  GpuRole,
  HsiOptions,
  HsiQuery,
  KernelFile,
  ProfileType,
  TraceSearch,
  TraceSummary,
} from './types';

type Params = Record<string, string | number | string[]>;

/** All logic lives in the Go backend; the frontend interpolates variables and fills dropdowns. */
export class DataSource extends DataSourceWithBackend<HsiQuery, HsiOptions> {
  constructor(instanceSettings: DataSourceInstanceSettings<HsiOptions>) {
    super(instanceSettings);
  }

  getDefaultQuery(_: CoreApp): Partial<HsiQuery> {
    return DEFAULT_QUERY;
  }

  applyTemplateVariables(query: HsiQuery, scopedVars: ScopedVars): HsiQuery {
    const srv = getTemplateSrv();
    const text = (s?: string) => (s === undefined ? undefined : srv.replace(s, scopedVars));
    const list = (l?: string[]) => interpolateList(l, scopedVars);
    const side = (s?: DiffSide): DiffSide | undefined =>
      s && {
        ...s,
        from: text(s.from),
        to: text(s.to),
        labelSelector: text(s.labelSelector),
        traceId: text(s.traceId),
        spanSelector: list(s.spanSelector),
      };
    return {
      ...query,
      labelSelector: text(query.labelSelector),
      profileTypeId: text(query.profileTypeId),
      traceId: text(query.traceId),
      spanSelector: list(query.spanSelector),
      groupBy: list(query.groupBy),
      baseline: side(query.baseline),
      comparison: side(query.comparison),
      allocTypeId: text(query.allocTypeId),
      service: text(query.service),
      endpoint: text(query.endpoint),
      minDuration: text(query.minDuration),
      operation: text(query.operation),
      metrics: list(query.metrics),
      hosts: list(query.hosts),
      gpus: list(query.gpus),
      models: list(query.models),
      pods: list(query.pods),
      namespaces: list(query.namespaces),
      services: list(query.services),
      // Classes may hold a variable ($class): the backend checks what it is replaced by.
      classes: list(query.classes) as HsiQuery['classes'],
      file: text(query.file),
    };
  }

  /**
   * Hidden queries are not sent. Neither is a query aimed at one request whose trace or span
   * variable is empty (the Request-Level dashboard before a trace is picked): without its
   * `$trace_id` it would silently become the profile of all traffic, so the panel shows "No data"
   * instead. A trace query is about nothing else, so it waits for a trace ID even when the field
   * is blank. Grafana filters before interpolating and passes no scoped variables here, so a
   * panel repeated over trace_id is judged by the variable's current value.
   */
  filterQuery(query: HsiQuery): boolean {
    if (query.hide) {
      return false;
    }
    const srv = getTemplateSrv();
    if (query.queryType === 'trace' && !srv.replace(query.traceId ?? '').trim()) {
      return false;
    }
    const requestIds = [query, query.baseline, query.comparison].flatMap((q) => [
      q?.traceId,
      ...(q?.spanSelector ?? []),
    ]);
    return !requestIds.some((id) => id?.trim() && !srv.replace(id).trim());
  }

  /** Variable query: the backend reads the query text and answers [{text, value}]. */
  async metricFindQuery(query: string | { query?: string }, options?: LegacyMetricFindQueryOptions) {
    const text = typeof query === 'string' ? query : (query?.query ?? '');
    const params: Params = {
      // Multi-value variables as a|b: the backend splits them (gpu_label_values(gpu, "$host")).
      query: getTemplateSrv().replace(text, options?.scopedVars, 'pipe'),
      ...rangeParams(options?.range?.from.valueOf(), options?.range?.to.valueOf()),
    };
    const values = await this.getResource<Array<{ text: string; value?: string | number }>>('variable', params);
    return (values ?? []).map((v): MetricFindValue => ({ text: v.text, value: v.value ?? v.text }));
  }

  /** Profile types with data in the range (Unix ms), for the editor's picker. */
  getProfileTypes(from?: number, to?: number): Promise<ProfileType[]> {
    return this.getResource<ProfileType[]>('profile-types', rangeParams(from, to));
  }

  /** GPU kernel trace files under the configured directories, most recent first; of one request with traceId. */
  async getKernelFiles(traceId?: string): Promise<KernelFile[]> {
    const params: Record<string, string> = {};
    const id = traceId ? this.interpolate(traceId).trim() : '';
    if (id && !id.startsWith('$')) {
      params.traceId = id;
    }
    const res = await this.getResource<{ files: KernelFile[] }>('kernel-files', params);
    return res.files ?? [];
  }

  /** Pyroscope's service_name values. */
  getServices(from?: number, to?: number): Promise<string[]> {
    return this.getResource<string[]>('services', rangeParams(from, to));
  }

  getLabelNames(selector: string, from?: number, to?: number): Promise<string[]> {
    return this.getResource<string[]>('label-names', {
      selector: this.interpolate(selector),
      ...rangeParams(from, to),
    });
  }

  getLabelValues(label: string, selector: string, from?: number, to?: number): Promise<string[]> {
    const params = { label, selector: this.interpolate(selector), ...rangeParams(from, to) };
    return this.getResource<string[]>('label-values', params);
  }

  /** The trace store's services (Jaeger or Tempo). */
  getTraceServices(): Promise<string[]> {
    return this.getResource<string[]>('trace-services');
  }

  /** The operations (span names) of a service in the trace store, sorted. */
  getTraceOperations(service: string): Promise<string[]> {
    return this.getResource<string[]>('trace-operations', { service: this.interpolate(service) });
  }

  /** Recent traces of a service in the range, from the trace store. */
  getTraces(search: TraceSearch, from?: number, to?: number): Promise<TraceSummary[]> {
    const params: Params = { service: this.interpolate(search.service), ...rangeParams(from, to) };
    for (const key of ['operation', 'minDuration', 'limit'] as const) {
      if (search[key] !== undefined && search[key] !== '') {
        params[key] = search[key];
      }
    }
    return this.getResource<TraceSummary[]>('traces', params);
  }

  /** The DCGM series the gpuMetrics query knows, for its picker. */
  getGpuMetrics(): Promise<GpuMetric[]> {
    return this.getResource<GpuMetric[]>('gpu-metrics');
  }

  /**
   * Hosts, GPUs (index or UUID), models, pods or namespaces with GPU series in the range; the
   * GPUs of the chosen hosts only when given (sent as repeated hosts= parameters).
   */
  getGpuLabelValues(role: GpuRole, from?: number, to?: number, hosts?: string[]): Promise<string[]> {
    const params: Params = { role, ...rangeParams(from, to) };
    const scope = interpolateList(hosts);
    if (scope?.length) {
      params.hosts = scope;
    }
    return this.getResource<string[]>('gpu-label-values', params);
  }

  /** Lookups run before the query does, so dashboard variables in them are replaced here. */
  private interpolate(s: string): string {
    return getTemplateSrv().replace(s);
  }
}

/** List items may be multi-value variables: 'csv' gives a,b, which becomes two items. */
function interpolateList(list?: string[], scopedVars?: ScopedVars): string[] | undefined {
  return list
    ?.flatMap((item) => getTemplateSrv().replace(item, scopedVars, 'csv').split(','))
    .map((s) => s.trim())
    .filter(Boolean);
}

function rangeParams(from?: number, to?: number): Params {
  return from !== undefined && to !== undefined ? { from, to } : {};
}
