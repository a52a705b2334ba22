import { DataSourceInstanceSettings, dateTime } from '@grafana/data';

import { DataSource } from './datasource';
import { HsiOptions } from './types';

/** Dashboard variables: $spans and $hosts are multi-valued, $empty has no value yet. */
const vars: Record<string, string | string[]> = {
  service: 'nemotron-backend',
  span: 'abc123',
  spans: ['00f067aa0ba902b7', '4bf92f3577b34da6'],
  hosts: ['gpu-node-1', 'gpu-node-2'],
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  window: '1h',
  min: '500ms',
  metric: 'gpu_utilization',
  classes: ['xid', 'ecc'],
  empty: '',
};
const replace = jest.fn((s: string, _scoped?: unknown, format?: string) =>
  s.replace(/\$(\w+)/g, (v, name) => {
    const value = vars[name] ?? v;
    if (!Array.isArray(value)) {
      return value;
    }
    return format === 'csv' ? value.join(',') : `{${value.join(',')}}`;
  })
);

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getTemplateSrv: () => ({ replace }),
}));

const ds = new DataSource({ id: 1, uid: 'hsi', jsonData: {} } as unknown as DataSourceInstanceSettings<HsiOptions>);

describe('DataSource', () => {
  it('interpolates dashboard variables in every free-text field', () => {
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'profile',
        labelSelector: '{service_name="$service"}',
        profileTypeId: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
        spanSelector: ['$span'],
        groupBy: ['$service'],
      },
      {}
    );
    expect(out.labelSelector).toBe('{service_name="nemotron-backend"}');
    expect(out.spanSelector).toEqual(['abc123']);
    expect(out.groupBy).toEqual(['nemotron-backend']);
    expect(out.queryType).toBe('profile');
  });

  it('interpolates the kernels query: trace ID and file', () => {
    const out = ds.applyTemplateVariables(
      { refId: 'A', queryType: 'kernels', traceId: '$trace_id', file: 'infer/$service.pt.trace.json' },
      {}
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'kernels',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      file: 'infer/nemotron-backend.pt.trace.json',
    });
  });

  it('does not invent fields a query did not have', () => {
    const out = ds.applyTemplateVariables({ refId: 'A', queryType: 'profile' }, {});
    expect(out.labelSelector).toBeUndefined();
    expect(out.spanSelector).toBeUndefined();
  });

  it('interpolates the trace ID, multi-value list variables and both diff sides', () => {
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'diff',
        traceId: '$trace_id',
        spanSelector: ['$spans', '$span'],
        baseline: { from: 'now-$window', to: 'now', labelSelector: '{service_name="$service"}' },
        comparison: { traceId: '$trace_id', spanSelector: ['$span'] },
      },
      {}
    );
    expect(out.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(out.spanSelector).toEqual(['00f067aa0ba902b7', '4bf92f3577b34da6', 'abc123']);
    expect(out.baseline).toEqual({
      from: 'now-1h',
      to: 'now',
      labelSelector: '{service_name="nemotron-backend"}',
    });
    expect(out.comparison).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanSelector: ['abc123'] });
  });

  it('interpolates the GPU filters, a multi-value host variable becoming several hosts', () => {
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'gpuMetrics',
        metrics: ['$metric', 'fb_used'],
        hosts: ['$hosts'],
        gpus: ['0', '$empty'],
        models: ['$service'],
        pods: ['$service-0'],
        namespaces: ['$service'],
        aggregation: 'host',
      },
      {}
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'gpuMetrics',
      metrics: ['gpu_utilization', 'fb_used'],
      hosts: ['gpu-node-1', 'gpu-node-2'],
      gpus: ['0'],
      models: ['nemotron-backend'],
      pods: ['nemotron-backend-0'],
      namespaces: ['nemotron-backend'],
      aggregation: 'host',
    });
  });

  it('interpolates the triage services and classes, a multi-value variable becoming several', () => {
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'triage',
        view: 'failures',
        services: ['$service', '$empty'],
        // A classes variable: the backend checks the classes it stands for.
        classes: ['cudaOOM', '$classes' as 'xid'],
        hosts: ['$hosts'],
      },
      {}
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'triage',
      view: 'failures',
      services: ['nemotron-backend'],
      classes: ['cudaOOM', 'xid', 'ecc'],
      hosts: ['gpu-node-1', 'gpu-node-2'],
    });
  });

  it('interpolates the trace and slow-request fields', () => {
    const trace = ds.applyTemplateVariables(
      { refId: 'A', queryType: 'trace', traceId: '$trace_id', allocTypeId: '$empty' },
      {}
    );
    expect(trace).toEqual({
      refId: 'A',
      queryType: 'trace',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      allocTypeId: '',
    });
    const slow = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'slowRequests',
        service: '$service',
        endpoint: 'POST /$window',
        minDuration: '$min',
        limit: 5,
      },
      {}
    );
    expect(slow).toEqual({
      refId: 'A',
      queryType: 'slowRequests',
      service: 'nemotron-backend',
      endpoint: 'POST /1h',
      minDuration: '500ms',
      limit: 5,
    });
  });

  it("interpolates the span queries' service and operation, and leaves Pyroscope's selectors as they are", () => {
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'spanProfile',
        service: '$service',
        operation: 'POST /$window',
        minDuration: '$min',
        percentile: 95,
        profileIdSelector: ['7c9e6679-7425-40de-944b-e07fc1f90ae7'],
        stackTraceSelector: ['main', 'Outer$service.run'],
      },
      {}
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'spanProfile',
      service: 'nemotron-backend',
      operation: 'POST /1h',
      minDuration: '500ms',
      percentile: 95,
      profileIdSelector: ['7c9e6679-7425-40de-944b-e07fc1f90ae7'],
      // Function names are kept as written: a Java inner class is no variable, even named like one.
      stackTraceSelector: ['main', 'Outer$service.run'],
    });
  });

  it('passes scoped variables on', () => {
    const scoped = { service: { text: 'x', value: 'x' } };
    ds.applyTemplateVariables({ refId: 'A', traceId: '$trace_id' }, scoped);
    expect(replace).toHaveBeenCalledWith('$trace_id', scoped);
  });

  it('skips hidden queries', () => {
    expect(ds.filterQuery({ refId: 'A', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A' })).toBe(true);
  });

  it('skips a query for one request while its trace or span variable is empty', () => {
    expect(ds.filterQuery({ refId: 'A', queryType: 'profile', traceId: '$empty' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'profile', spanSelector: ['$empty'] })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'diff', comparison: { traceId: '$empty' } })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'profile', traceId: '$trace_id' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'profile', traceId: '' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'diff', baseline: { from: 'now-1h' } })).toBe(true);
  });

  it('skips a trace query until it has a trace ID', () => {
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace', traceId: '$empty' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace', traceId: ' ' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace' })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace', traceId: '$trace_id' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace', traceId: '00f067aa0ba902b7' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'trace', traceId: '$trace_id', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A', queryType: 'slowRequests' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'gpuClass', hosts: ['$empty'] })).toBe(true);
  });

  it('defaults to a CPU flame graph', () => {
    expect(ds.getDefaultQuery('explore' as never)).toEqual({
      queryType: 'profile',
      labelSelector: '{}',
      profileTypeId: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
    });
  });

  describe('resources', () => {
    const from = dateTime(1700000000000);
    const to = dateTime(1700003600000);
    const range = { from, to, raw: { from, to } };
    let getResource: jest.Mock;
    beforeEach(() => {
      getResource = jest.fn().mockResolvedValue([]);
      ds.getResource = getResource;
    });

    it('answers variable queries from the variable resource, interpolated, over the dashboard range', async () => {
      getResource.mockResolvedValue([
        { text: 'nemotron-backend', value: 'nemotron-backend' },
        { text: 'POST /generate 1.2 s', value: '4bf92f3577b34da6a3ce929d0e0e4736' },
      ]);
      const values = await ds.metricFindQuery('trace_ids($service)', { range });
      expect(getResource).toHaveBeenCalledWith('variable', {
        query: 'trace_ids(nemotron-backend)',
        from: 1700000000000,
        to: 1700003600000,
      });
      expect(values).toEqual([
        { text: 'nemotron-backend', value: 'nemotron-backend' },
        { text: 'POST /generate 1.2 s', value: '4bf92f3577b34da6a3ce929d0e0e4736' },
      ]);
    });

    it('sends a variable query without a range when there is none', async () => {
      getResource.mockResolvedValue([{ text: 'only-text' }]);
      expect(await ds.metricFindQuery({ query: 'services()' })).toEqual([{ text: 'only-text', value: 'only-text' }]);
      expect(getResource).toHaveBeenCalledWith('variable', { query: 'services()' });
    });

    it('asks each editor lookup of its route, with selectors interpolated', async () => {
      await ds.getServices(1, 2);
      expect(getResource).toHaveBeenLastCalledWith('services', { from: 1, to: 2 });
      await ds.getLabelNames('{service_name="$service"}', 1, 2);
      expect(getResource).toHaveBeenLastCalledWith('label-names', {
        selector: '{service_name="nemotron-backend"}',
        from: 1,
        to: 2,
      });
      await ds.getLabelValues('env', '{}');
      expect(getResource).toHaveBeenLastCalledWith('label-values', { label: 'env', selector: '{}' });
      await ds.getTraceServices();
      expect(getResource).toHaveBeenLastCalledWith('trace-services');
      await ds.getTraces({ service: '$service', minDuration: '500ms', operation: '' }, 1, 2);
      expect(getResource).toHaveBeenLastCalledWith('traces', {
        service: 'nemotron-backend',
        minDuration: '500ms',
        from: 1,
        to: 2,
      });
    });

    it("lists a Jaeger service's operations, the service interpolated", async () => {
      getResource.mockResolvedValue(['GET /health', 'POST /generate']);
      expect(await ds.getTraceOperations('$service')).toEqual(['GET /health', 'POST /generate']);
      expect(getResource).toHaveBeenLastCalledWith('trace-operations', { service: 'nemotron-backend' });
      await ds.getTraceOperations('api');
      expect(getResource).toHaveBeenLastCalledWith('trace-operations', { service: 'api' });
    });

    it('asks the GPU lookups of their routes, the GPU picker scoped to the chosen hosts', async () => {
      await ds.getGpuMetrics();
      expect(getResource).toHaveBeenLastCalledWith('gpu-metrics');
      await ds.getGpuLabelValues('host', 1, 2);
      expect(getResource).toHaveBeenLastCalledWith('gpu-label-values', { role: 'host', from: 1, to: 2 });
      await ds.getGpuLabelValues('gpu', 1, 2, ['$hosts', 'gpu-node-9']);
      expect(getResource).toHaveBeenLastCalledWith('gpu-label-values', {
        role: 'gpu',
        from: 1,
        to: 2,
        hosts: ['gpu-node-1', 'gpu-node-2', 'gpu-node-9'],
      });
      await ds.getGpuLabelValues('gpu', undefined, undefined, ['$empty']);
      expect(getResource).toHaveBeenLastCalledWith('gpu-label-values', { role: 'gpu' });
    });
  });
});
