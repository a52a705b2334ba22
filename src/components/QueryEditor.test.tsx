import React, { useState } from 'react';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { DataSourceInstanceSettings, dateTime } from '@grafana/data';

import { QueryEditor } from './QueryEditor';
import { DataSource } from '../datasource';
import { QUERY_TYPE_INFO, SLOW_REQUESTS_PARTS, TRACE_PARTS, TRIAGE_CLASSES } from '../generated/vocabulary';
import { HsiOptions, HsiQuery, QUERY_TYPES, QueryType, TraceSummary } from '../types';

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getTemplateSrv: () => ({ replace: (s: string) => s }),
}));

beforeAll(() => {
  // Combobox virtualises its menu (sized by clientHeight) and watches scrolling; jsdom has neither.
  // Tall enough that the menu draws every query type, each with its description.
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, value: 1000 });
  Object.defineProperty(HTMLElement.prototype, 'clientWidth', { configurable: true, value: 400 });
  Object.assign(global, {
    IntersectionObserver: class {
      observe() {}
      unobserve() {}
      disconnect() {}
    },
  });
});

const traces: TraceSummary[] = [
  {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    rootService: 'api',
    rootOperation: 'GET /health',
    start: 1700000100000,
    durationMs: 12,
    // A health check: its one span.
    spans: 1,
    services: ['api'],
  },
  {
    traceId: '00f067aa0ba902b700f067aa0ba902b7',
    rootService: 'api',
    rootOperation: 'POST /generate',
    start: 1700000200000,
    durationMs: 1200,
    spans: 14,
    services: ['api', 'nemotron-backend'],
  },
];

const traceOperations: Record<string, string[]> = {
  api: ['GET /health', 'POST /generate'],
  frontend: ['GET /', 'render'],
};

const gpuLabelValues: Record<string, string[]> = {
  host: ['gpu-node-1', 'gpu-node-2'],
  gpu: ['0', 'GPU-5fd4bd2f'],
  model: ['NVIDIA H100 80GB HBM3'],
  pod: ['triton-0'],
  namespace: ['inference'],
};

/**
 * A real data source whose resource calls answer from this table (or fail with its Error); a
 * function answers from the call's parameters.
 */
function fakeDatasource(answers: Record<string, unknown> = {}) {
  const ds = new DataSource({ id: 1, uid: 'hsi', jsonData: {} } as unknown as DataSourceInstanceSettings<HsiOptions>);
  const table: Record<string, unknown> = {
    'profile-types': [],
    services: ['api', 'nemotron-backend'],
    'label-names': ['env', 'service_name'],
    'label-values': ['prod', 'staging'],
    traces,
    'trace-services': ['frontend', 'api'],
    'trace-operations': (params: { service: string }) => traceOperations[params.service],
    'gpu-metrics': [
      { name: 'gpu_utilization', title: 'GPU utilisation', description: 'Share of time kernels ran.', unit: 'percent' },
      {
        name: 'fb_used',
        title: 'Framebuffer used',
        description: 'Device memory in use. Includes the driver.',
        unit: 'mbytes',
      },
    ],
    'gpu-label-values': (params: { role: string }) => gpuLabelValues[params.role],
    'kernel-files': {
      files: [
        {
          file: 'infer/infer_4bf92f3577b34da6a3ce929d0e0e4736.pt.trace.json',
          size: 2048,
          modified: '2026-01-01T00:00:00Z',
          traceIds: ['4bf92f3577b34da6a3ce929d0e0e4736'],
        },
      ],
    },
    ...answers,
  };
  const getResource = jest.fn((path: string, params?: unknown) => {
    const answer = table[path];
    return answer instanceof Error
      ? Promise.reject(answer)
      : Promise.resolve(typeof answer === 'function' ? answer(params) : answer);
  });
  ds.getResource = getResource as unknown as DataSource['getResource'];
  return { ds, getResource };
}

const from = dateTime(1700000000000);
const to = dateTime(1700003600000);
const range = { from, to, raw: { from, to } };
const rangeParams = { from: 1700000000000, to: 1700003600000 };

/** Renders the editor as Grafana does: it owns the query and passes every change back. */
async function renderEditor(initial: HsiQuery, ds = fakeDatasource().ds) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  function Host() {
    const [query, setQuery] = useState(initial);
    return (
      <QueryEditor
        query={query}
        onChange={(q) => {
          onChange(q);
          setQuery(q);
        }}
        onRunQuery={onRunQuery}
        datasource={ds}
        range={range}
      />
    );
  }
  await act(async () => {
    render(<Host />);
  });
  return { onChange, onRunQuery, last: (): HsiQuery => onChange.mock.calls[onChange.mock.calls.length - 1][0] };
}

/** Opens the labelled Combobox and clicks the option with that name. */
async function pick(label: string, option: string | RegExp) {
  fireEvent.click(screen.getByLabelText(label));
  const picked = await screen.findByRole('option', { name: option });
  // Picking may draw fields that ask the backend at once (another query type's editor).
  await act(async () => {
    fireEvent.click(picked);
  });
}

/** Opens the row of less common fields (trace ID, span IDs, max nodes). */
function openOptions() {
  fireEvent.click(screen.getByRole('button', { name: /^Options/ }));
}

/** Types into a text field and leaves it, which is when the editor writes the query. */
function type(label: string, value: string) {
  const input = screen.getByLabelText(label);
  fireEvent.change(input, { target: { value } });
  fireEvent.blur(input);
}

describe('QueryEditor', () => {
  it('offers the query types, the profile type selected for a query without one', async () => {
    await renderEditor({ refId: 'A' });
    expect(screen.getByLabelText('Query type')).toHaveValue('Profile');
    expect(screen.getByLabelText('Label selector')).toHaveValue('{}');
    fireEvent.click(screen.getByLabelText('Query type'));
    const options = await screen.findAllByRole('option');
    expect(options.map((o) => o.textContent)).toEqual([
      expect.stringMatching(/^Profile/),
      expect.stringMatching(/^Metrics/),
      expect.stringMatching(/^Both/),
      expect.stringMatching(/^Diff/),
      expect.stringMatching(/^Request \(trace\)/),
      expect.stringMatching(/^Slow requests/),
      expect.stringMatching(/^Span heatmap/),
      expect.stringMatching(/^Span profile/),
      expect.stringMatching(/^Slow tail/),
      expect.stringMatching(/^GPU metrics/),
      expect.stringMatching(/^GPU class/),
      expect.stringMatching(/^Local GPUs \(NVML\)/),
      expect.stringMatching(/^GPU kernels/),
      expect.stringMatching(/^GPU incidents \(triage\)/),
    ]);
  });

  it('describes each query type in its menu', async () => {
    await renderEditor({ refId: 'A' });
    fireEvent.click(screen.getByLabelText('Query type'));
    const options = await screen.findAllByRole('option');
    expect(options.map((o) => o.textContent)).toEqual(QUERY_TYPES.map((t) => `${t.label}${t.description}`));
    expect(QUERY_TYPES.every((t) => t.description.length > 40)).toBe(true);
  });

  it('switches the query type', async () => {
    const { last, onRunQuery } = await renderEditor({ refId: 'A' });
    await pick('Query type', /^Diff/);
    expect(last()).toEqual({ refId: 'A', queryType: 'diff' });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('asks the backend for profile types of the dashboard range', async () => {
    const { ds, getResource } = fakeDatasource();
    await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
    await waitFor(() => expect(getResource).toHaveBeenCalledWith('profile-types', rangeParams));
  });

  it('writes the label selector when the field loses focus', async () => {
    const { onChange, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'profile' });
    const input = screen.getByLabelText('Label selector');
    fireEvent.change(input, { target: { value: '{service_name="nemotron-backend"}' } });
    expect(onChange).not.toHaveBeenCalled();
    fireEvent.blur(input);
    expect(onChange).toHaveBeenLastCalledWith({
      refId: 'A',
      queryType: 'profile',
      labelSelector: '{service_name="nemotron-backend"}',
    });
    expect(onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('writes max nodes as a number', async () => {
    const { onChange } = await renderEditor({ refId: 'A', queryType: 'profile' });
    openOptions();
    fireEvent.change(screen.getByLabelText('Max nodes'), { target: { value: '512' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'profile', maxNodes: 512 });
  });

  it('says why profile types could not be listed', async () => {
    const { ds } = fakeDatasource({
      'profile-types': Object.assign(new Error('x'), { data: { error: 'Pyroscope is not configured' } }),
    });
    await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
    expect(await screen.findByText('Pyroscope is not configured')).toBeInTheDocument();
  });

  describe('service and label pickers', () => {
    it('adds the picked service to the label selector', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A', queryType: 'profile', labelSelector: '{env="prod"}' }, ds);
      await pick('Service', 'nemotron-backend');
      expect(getResource).toHaveBeenCalledWith('services', rangeParams);
      expect(last().labelSelector).toBe('{service_name="nemotron-backend", env="prod"}');
    });

    it('replaces the service already in the selector and shows it', async () => {
      const { last } = await renderEditor({
        refId: 'A',
        queryType: 'profile',
        labelSelector: '{env="prod", service_name=~"old.*"}',
      });
      await pick('Service', 'api');
      expect(last().labelSelector).toBe('{env="prod", service_name="api"}');
      expect(screen.getByLabelText('Service')).toHaveValue('api');
    });

    it('appends a label and a value picked from the backend', async () => {
      const { ds, getResource } = fakeDatasource();
      const selector = '{service_name="api"}';
      const { last } = await renderEditor({ refId: 'A', queryType: 'metrics', labelSelector: selector }, ds);
      await pick('Label', 'env');
      expect(getResource).toHaveBeenCalledWith('label-names', { selector, ...rangeParams });
      await pick('=', 'prod');
      expect(getResource).toHaveBeenCalledWith('label-values', { label: 'env', selector, ...rangeParams });
      expect(last().labelSelector).toBe('{service_name="api", env="prod"}');
      expect(screen.getByLabelText('Label selector')).toHaveValue('{service_name="api", env="prod"}');
    });
  });

  describe('profile of one request', () => {
    it('sets the trace ID from the slowest recent traces of the chosen service', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor(
        { refId: 'A', queryType: 'profile', labelSelector: '{service_name="api"}' },
        ds
      );
      openOptions();
      fireEvent.click(screen.getByLabelText('Slow traces'));
      const options = await screen.findAllByRole('option');
      expect(options[0]).toHaveTextContent('POST /generate · 1.20 s');
      expect(options[0]).toHaveTextContent('00f067aa0ba902b700f067aa0ba902b7 · 14 spans · api, nemotron-backend');
      expect(options[1]).toHaveTextContent('GET /health · 12 ms');
      expect(options[1]).toHaveTextContent('4bf92f3577b34da6a3ce929d0e0e4736 · 1 span · api');
      fireEvent.click(options[0]);
      expect(getResource).toHaveBeenCalledWith('traces', { service: 'api', limit: 20, ...rangeParams });
      expect(last().traceId).toBe('00f067aa0ba902b700f067aa0ba902b7');
      expect(screen.getByLabelText('Trace ID')).toHaveValue('00f067aa0ba902b700f067aa0ba902b7');
    });

    it('offers no traces until a service is chosen', async () => {
      await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      expect(screen.getByLabelText('Slow traces')).toBeDisabled();
    });

    it('writes a typed trace ID, span IDs as a list and the per-service switch', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      expect(screen.getByLabelText('Per service')).toBeDisabled();
      type('Span IDs', '00f067aa0ba902b7, 4bf92f3577b34da6');
      expect(last().spanSelector).toEqual(['00f067aa0ba902b7', '4bf92f3577b34da6']);
      type('Span IDs', '');
      expect(last().spanSelector).toBeUndefined();
      type('Trace ID', '$trace_id');
      expect(last().traceId).toBe('$trace_id');
      fireEvent.click(screen.getByLabelText('Per service'));
      expect(last()).toEqual({ refId: 'A', queryType: 'profile', traceId: '$trace_id', perService: true });
    });

    it('is not offered for metrics', async () => {
      await renderEditor({ refId: 'A', queryType: 'metrics' });
      openOptions();
      expect(screen.getByLabelText('Exemplars')).toBeInTheDocument();
      expect(screen.queryByLabelText('Trace ID')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Profile IDs')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Max nodes')).not.toBeInTheDocument();
    });
  });

  describe('options row', () => {
    it('is closed and says what the options are', async () => {
      await renderEditor({ refId: 'A', queryType: 'profile' });
      expect(screen.getByRole('button', { name: /^Options/ })).toHaveAttribute('aria-expanded', 'false');
      expect(screen.getByText('All requests')).toBeInTheDocument();
      expect(screen.getByText('Max nodes 16384')).toBeInTheDocument();
      expect(screen.queryByLabelText('Trace ID')).not.toBeInTheDocument();
    });

    it.each([
      [{ traceId: '$trace_id', perService: true, maxNodes: 512 }, ['Trace $trace_id, per service', 'Max nodes 512']],
      [{ spanSelector: ['00f067aa0ba902b7'] }, ['1 span', 'Max nodes 16384']],
      [{ spanSelector: ['00f067aa0ba902b7', '4bf92f3577b34da6'] }, ['2 spans', 'Max nodes 16384']],
    ])('sums up %j', async (set, summary) => {
      await renderEditor({ refId: 'A', queryType: 'profile', ...set });
      for (const text of summary) {
        expect(screen.getByText(text)).toBeInTheDocument();
      }
    });

    it('sums up each side of a diff', async () => {
      await renderEditor({
        refId: 'A',
        queryType: 'diff',
        baseline: { from: 'now-1h' },
        comparison: { traceId: '$trace_id' },
      });
      expect(screen.getByText('Baseline: all requests')).toBeInTheDocument();
      expect(screen.getByText('Comparison: trace $trace_id')).toBeInTheDocument();
    });

    it('opens by itself when a field in it is wrong', async () => {
      await renderEditor({ refId: 'A', queryType: 'profile', traceId: '4bf92f35' });
      expect(screen.getByRole('button', { name: /^Options/ })).toHaveAttribute('aria-expanded', 'true');
      expect(screen.getByText('A trace ID has 16 or 32 hex digits')).toBeInTheDocument();
    });
  });

  describe('validation', () => {
    it.each([
      ['Trace ID', '4bf92f35', 'A trace ID has 16 or 32 hex digits'],
      ['Span IDs', '00f067aa0ba902b7, xyz', '"xyz" is not a span ID (16 hex digits)'],
      ['Label selector', 'service_name="api"', 'A label selector looks like {service_name="api", env=~"prod.*"}'],
      ['Label selector', '{service_name="api}', 'The label selector has an unclosed quote'],
    ])('%s %s: %s', async (label, value, message) => {
      await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      fireEvent.change(screen.getByLabelText(label), { target: { value } });
      expect(screen.getByText(message)).toBeInTheDocument();
    });

    it.each([
      ['Trace ID', '$trace_id'],
      ['Trace ID', '${trace_id}'],
      ['Trace ID', '00f067aa0ba902b7'],
      ['Span IDs', '${span:csv}'],
      ['Label selector', '{service_name="${service}"}'],
    ])('lets %s %s through', async (label, value) => {
      await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      fireEvent.change(screen.getByLabelText(label), { target: { value } });
      expect(screen.getByLabelText(label)).not.toHaveAttribute('aria-invalid', 'true');
      expect(screen.queryByText(/hex digits|looks like|unclosed/)).not.toBeInTheDocument();
    });

    it('checks a stored query too, and that trace and spans exclude each other', async () => {
      await renderEditor({
        refId: 'A',
        queryType: 'profile',
        profileTypeId: 'process_cpu:cpu',
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanSelector: ['00f067aa0ba902b7'],
      });
      expect(screen.getByText(/A profile type has five parts/)).toBeInTheDocument();
      expect(screen.getByText(/Use either a trace ID or span IDs/)).toBeInTheDocument();
    });
  });

  describe('metrics and both', () => {
    it('groups by labels picked from the backend and keeps the top N', async () => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'metrics' });
      await pick('Group by', 'env');
      expect(last().groupBy).toEqual(['env']);
      fireEvent.change(screen.getByLabelText('Limit'), { target: { value: '5' } });
      expect(last()).toEqual({ refId: 'A', queryType: 'metrics', groupBy: ['env'], limit: 5 });
      const runs = onRunQuery.mock.calls.length;
      fireEvent.blur(screen.getByLabelText('Limit'));
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
    });

    it('has both the series fields and max nodes for both', async () => {
      await renderEditor({ refId: 'A', queryType: 'both' });
      expect(screen.getByLabelText('Group by')).toBeInTheDocument();
      expect(screen.getByLabelText('Limit')).toBeInTheDocument();
      openOptions();
      expect(screen.getByLabelText('Max nodes')).toBeInTheDocument();
    });
  });

  describe('diff', () => {
    it('writes each side: a request against the service over the last hour', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'diff', labelSelector: '{service_name="api"}' });
      expect(screen.getByLabelText('Baseline from')).toHaveAttribute('placeholder', 'panel time range');
      expect(screen.getByLabelText('Baseline label selector')).toHaveAttribute(
        'placeholder',
        'same selector as the query'
      );
      openOptions();
      type('Comparison trace ID', '$trace_id');
      type('Baseline from', 'now-1h');
      type('Baseline to', 'now');
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'diff',
        labelSelector: '{service_name="api"}',
        baseline: { from: 'now-1h', to: 'now' },
        comparison: { traceId: '$trace_id' },
      });
    });

    it('writes a side selector and span IDs, and drops a side left empty', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'diff', comparison: { traceId: 'abc' } });
      type('Baseline label selector', '{env="staging"}');
      type('Baseline span IDs', '00f067aa0ba902b7');
      expect(last().baseline).toEqual({ labelSelector: '{env="staging"}', spanSelector: ['00f067aa0ba902b7'] });
      type('Comparison trace ID', '');
      expect(last().comparison).toBeUndefined();
    });

    it('checks each side', async () => {
      await renderEditor({ refId: 'A', queryType: 'diff', comparison: { traceId: 'abc' }, baseline: { from: '1h' } });
      expect(screen.getByText('A trace ID has 16 or 32 hex digits')).toBeInTheDocument();
      expect(screen.getByText('Unix milliseconds or a relative time: now, now-1h, now-2d')).toBeInTheDocument();
    });
  });

  describe('request (trace)', () => {
    const profileTypes = [
      {
        id: 'memory:alloc_objects:count:space:bytes',
        name: 'memory',
        sampleType: 'alloc_objects',
        sampleUnit: 'count',
      },
    ];

    it('picks a trace from the slowest of a Jaeger service, and the profile types', async () => {
      const { ds, getResource } = fakeDatasource({ 'profile-types': profileTypes });
      const { last } = await renderEditor({ refId: 'A', queryType: 'trace' }, ds);
      expect(screen.queryByLabelText('Label selector')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Max nodes')).not.toBeInTheDocument();
      expect(screen.getByLabelText('CPU profile')).toHaveValue('process_cpu:cpu:nanoseconds:cpu:nanoseconds');
      expect(screen.getByLabelText('Allocations')).toHaveValue('memory:alloc_space:bytes:space:bytes');
      expect(screen.getByLabelText('Slow traces')).toBeDisabled();

      await pick('Service', 'api');
      expect(getResource).toHaveBeenCalledWith('trace-services');
      await pick('Slow traces', /POST \/generate/);
      expect(getResource).toHaveBeenCalledWith('traces', { service: 'api', limit: 20, ...rangeParams });
      await pick('Allocations', /alloc_objects/);
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'trace',
        traceId: '00f067aa0ba902b700f067aa0ba902b7',
        allocTypeId: 'memory:alloc_objects:count:space:bytes',
      });
      expect(screen.getByLabelText('Trace ID')).toHaveValue('00f067aa0ba902b700f067aa0ba902b7');
    });

    it('picks the parts of the answer under Options, by label, and names them while closed', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'trace', traceId: '$trace_id' });
      expect(screen.getByText('Whole answer')).toBeInTheDocument();
      openOptions();
      fireEvent.click(screen.getByLabelText('Parts'));
      const options = await screen.findAllByRole('option');
      expect(options.map((o) => o.textContent)).toEqual([
        expect.stringMatching(/^Spans/),
        expect.stringMatching(/^Breakdown/),
        expect.stringMatching(/^Verdict/),
        expect.stringMatching(/^Flame graph/),
      ]);
      await act(async () => {
        fireEvent.click(screen.getByRole('option', { name: /^Verdict/ }));
      });
      expect(last()).toEqual({ refId: 'A', queryType: 'trace', traceId: '$trace_id', parts: ['verdict'] });
      expect(last().parts?.every((p) => (TRACE_PARTS as readonly string[]).includes(p))).toBe(true);
      fireEvent.click(screen.getByRole('button', { name: /Remove Verdict/ }));
      expect(last()).toEqual({ refId: 'A', queryType: 'trace', traceId: '$trace_id', parts: undefined });
      cleanup();
      await renderEditor({ refId: 'A', queryType: 'trace', parts: ['breakdown', 'verdict'] });
      expect(screen.getByText('Parts: Breakdown, Verdict')).toBeInTheDocument();
    });

    it('asks the backend for the profile types once for both pickers', async () => {
      const { ds, getResource } = fakeDatasource({ 'profile-types': profileTypes });
      await renderEditor({ refId: 'A', queryType: 'trace' }, ds);
      await pick('Allocations', /alloc_objects/);
      await pick('CPU profile', /alloc_objects/);
      const calls = getResource.mock.calls.filter(([path]) => path === 'profile-types');
      expect(calls).toEqual([['profile-types', rangeParams]]);
    });

    it('keeps the chosen service when the type is switched away and back', async () => {
      const { ds } = fakeDatasource();
      await renderEditor({ refId: 'A', queryType: 'trace' }, ds);
      await pick('Service', 'api');
      await pick('Query type', /^Slow requests/);
      expect(screen.queryByLabelText('Slow traces')).not.toBeInTheDocument();
      await pick('Query type', /^Request \(trace\)/);
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      expect(screen.getByLabelText('Slow traces')).toBeEnabled();
    });

    it('keeps the chosen service when Grafana draws the editor again, out of the query', async () => {
      const { ds } = fakeDatasource();
      const first = await renderEditor({ refId: 'A', queryType: 'trace' }, ds);
      await pick('Service', 'api');
      expect(first.onChange).not.toHaveBeenCalled();
      cleanup();
      await renderEditor({ refId: 'A', queryType: 'trace' }, ds);
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      cleanup();
      // Another data source has its own.
      await renderEditor({ refId: 'A', queryType: 'trace' }, fakeDatasource().ds);
      expect(screen.getByLabelText('Service')).toHaveValue('');
    });

    it('writes a typed trace ID and checks it', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'trace', profileTypeId: 'process_cpu' });
      expect(screen.getByText(/A profile type has five parts/)).toBeInTheDocument();
      type('Trace ID', '$trace_id');
      expect(last().traceId).toBe('$trace_id');
      fireEvent.change(screen.getByLabelText('Trace ID'), { target: { value: '4bf92f35' } });
      expect(screen.getByText('A trace ID has 16 or 32 hex digits')).toBeInTheDocument();
    });
  });

  describe('slow requests', () => {
    it('writes service, endpoint, minimum duration and limit', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'slowRequests' }, ds);
      expect(screen.getByLabelText('Limit')).toHaveAttribute('placeholder', '20');
      await pick('Service', 'frontend');
      expect(getResource).toHaveBeenCalledWith('trace-services');
      type('Endpoint', 'POST /generate');
      type('Min duration', '500ms');
      fireEvent.change(screen.getByLabelText('Limit'), { target: { value: '10' } });
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'slowRequests',
        service: 'frontend',
        endpoint: 'POST /generate',
        minDuration: '500ms',
        limit: 10,
      });
      const runs = onRunQuery.mock.calls.length;
      fireEvent.blur(screen.getByLabelText('Limit'));
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
    });

    it('offers to clear the service and drops blank text fields', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'slowRequests', service: 'api', endpoint: 'GET /' });
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      // The clear icon (jest's SVG mock cannot be clicked): the service is optional.
      expect(screen.getByTestId('times')).toBeInTheDocument();
      type('Endpoint', ' ');
      expect(last()).toEqual({ refId: 'A', queryType: 'slowRequests', service: 'api' });
    });

    it('picks the half a panel shows, by label', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'slowRequests' });
      fireEvent.click(screen.getByLabelText('Parts'));
      const options = await screen.findAllByRole('option');
      expect(options.map((o) => o.textContent)).toEqual([
        expect.stringMatching(/^Latency/),
        expect.stringMatching(/^Slow traces/),
      ]);
      await act(async () => {
        fireEvent.click(screen.getByRole('option', { name: /^Slow traces/ }));
      });
      expect(last()).toEqual({ refId: 'A', queryType: 'slowRequests', parts: ['traces'] });
      expect(last().parts?.every((p) => (SLOW_REQUESTS_PARTS as readonly string[]).includes(p))).toBe(true);
    });

    it.each(['5 minutes', '1d', '-1s', '500 ms'])('says %s is no duration', async (value) => {
      await renderEditor({ refId: 'A', queryType: 'slowRequests' });
      fireEvent.change(screen.getByLabelText('Min duration'), { target: { value } });
      expect(screen.getByText('A duration like 500ms, 1.5s or 1m30s')).toBeInTheDocument();
    });

    it.each(['500ms', '1.5s', '1m30s', '250us', '500', '0', '$min_duration', '${min}'])(
      'lets %s through',
      async (value) => {
        await renderEditor({ refId: 'A', queryType: 'slowRequests' });
        fireEvent.change(screen.getByLabelText('Min duration'), { target: { value } });
        expect(screen.queryByText(/A duration like/)).not.toBeInTheDocument();
      }
    );
  });

  describe("Grafana Pyroscope's options", () => {
    const uuid1 = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
    const uuid2 = 'A1B2C3D4-0000-4000-8000-00000000000F';

    it.each(['metrics', 'both'] as const)('writes the %s switches and clears them to unset', async (queryType) => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType });
      openOptions();
      fireEvent.click(screen.getByLabelText('Exemplars'));
      expect(last()).toEqual({ refId: 'A', queryType, includeExemplars: true });
      expect(onRunQuery).toHaveBeenCalled();
      fireEvent.click(screen.getByLabelText('Annotations'));
      expect(last()).toEqual({ refId: 'A', queryType, includeExemplars: true, annotations: true });
      fireEvent.click(screen.getByLabelText('Exemplars'));
      fireEvent.click(screen.getByLabelText('Annotations'));
      expect(last()).toEqual({ refId: 'A', queryType, includeExemplars: undefined, annotations: undefined });
    });

    it('picks the heatmap type once the heatmap is on, and drops it with the heatmap', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'metrics' });
      openOptions();
      expect(screen.getByRole('radio', { name: 'Individual' })).toBeChecked();
      expect(screen.getByRole('radio', { name: 'Span' })).toBeDisabled();
      fireEvent.click(screen.getByLabelText('Heatmap'));
      expect(last()).toMatchObject({ includeHeatmap: true });
      expect(last().heatmapType).toBeUndefined();
      fireEvent.click(screen.getByRole('radio', { name: 'Span' }));
      expect(last()).toMatchObject({ includeHeatmap: true, heatmapType: 'span' });
      fireEvent.click(screen.getByLabelText('Heatmap'));
      expect(last().includeHeatmap).toBeUndefined();
      expect(last().heatmapType).toBeUndefined();
      expect(screen.getByRole('radio', { name: 'Individual' })).toBeChecked();
    });

    const summaries: Array<[string, Partial<HsiQuery>, string[]]> = [
      ['metrics', {}, []],
      [
        'metrics',
        { includeExemplars: true, includeHeatmap: true, heatmapType: 'span' },
        ['Exemplars', 'Heatmap: span'],
      ],
      ['metrics', { includeHeatmap: true, annotations: true }, ['Heatmap: individual', 'Annotations']],
      // A heatmap type without the heatmap is not a heatmap.
      ['metrics', { heatmapType: 'span' }, []],
      [
        'both',
        { includeExemplars: true, profileIdSelector: [uuid1, uuid2], stackTraceSelector: ['main', 'handle'] },
        ['Exemplars', '2 profiles', 'Call site: … › handle', 'Max nodes 16384'],
      ],
      ['profile', { profileIdSelector: [uuid1] }, ['1 profile', 'Max nodes 16384']],
      ['profile', { stackTraceSelector: ['main'] }, ['All requests', 'Call site: main', 'Max nodes 16384']],
    ];
    it.each(summaries)('sums up %s %j in the closed options row', async (queryType, set, summary) => {
      await renderEditor({ refId: 'A', queryType: queryType as QueryType, ...set });
      // Exactly these, in this order: the row's accessible name is its title and summary.
      const row = screen.getByRole('button', { name: /^Options/ });
      expect(row).toHaveAttribute('aria-expanded', 'false');
      expect(row).toHaveAccessibleName(['Options', ...summary].join(' '));
    });

    it.each(['profile', 'both'] as const)('writes %s profile IDs and a call site as lists', async (queryType) => {
      const { last } = await renderEditor({ refId: 'A', queryType });
      openOptions();
      type('Profile IDs', `${uuid1}, ${uuid2}`);
      expect(last().profileIdSelector).toEqual([uuid1, uuid2]);
      // Commas inside a C++ template's brackets belong to the name.
      type('Call site', 'main, std::map<int, int>::find,handle');
      expect(last().stackTraceSelector).toEqual(['main', 'std::map<int, int>::find', 'handle']);
      expect(screen.getByLabelText('Call site')).toHaveValue('main, std::map<int, int>::find, handle');
      type('Profile IDs', ' ');
      type('Call site', '');
      expect(last().profileIdSelector).toBeUndefined();
      expect(last().stackTraceSelector).toBeUndefined();
      expect(last()).toEqual({ refId: 'A', queryType, profileIdSelector: undefined, stackTraceSelector: undefined });
    });

    it.each([
      [
        'Profile IDs',
        `${uuid1}, 7c9e6679`,
        '"7c9e6679" is not a profile ID (a UUID such as 7c9e6679-7425-40de-944b-e07fc1f90ae7)',
      ],
      // Not replaced by the data source: the backend would refuse it.
      [
        'Profile IDs',
        '$profile_id',
        '"$profile_id" is not a profile ID (a UUID such as 7c9e6679-7425-40de-944b-e07fc1f90ae7)',
      ],
      ['Call site', 'main,,handle', 'Function 2 of the call site is empty: names, root first, separated by commas'],
      ['Call site', 'main, ', 'Function 2 of the call site is empty: names, root first, separated by commas'],
    ])('%s %s: %s', async (label, value, message) => {
      await renderEditor({ refId: 'A', queryType: 'both' });
      openOptions();
      fireEvent.change(screen.getByLabelText(label), { target: { value } });
      expect(screen.getByText(message)).toBeInTheDocument();
      expect(screen.getByLabelText(label)).toHaveAttribute('aria-invalid', 'true');
    });

    it('splits a call site with unpaired brackets at every comma', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      type('Call site', 'main, std::operator<, handle');
      expect(last().stackTraceSelector).toEqual(['main', 'std::operator<', 'handle']);
    });

    it('says profile IDs exclude a trace ID, and opens the row for a stored mistake', async () => {
      await renderEditor({
        refId: 'A',
        queryType: 'profile',
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        profileIdSelector: [uuid1],
      });
      expect(screen.getByRole('button', { name: /^Options/ })).toHaveAttribute('aria-expanded', 'true');
      expect(
        screen.getByText('Profile IDs already name the profiles: remove the trace ID and span IDs')
      ).toBeInTheDocument();
    });

    it('has no Pyroscope series options for a profile, nor profile selectors for metrics', async () => {
      await renderEditor({ refId: 'A', queryType: 'profile' });
      openOptions();
      expect(screen.queryByLabelText('Exemplars')).not.toBeInTheDocument();
      cleanup();
      await renderEditor({ refId: 'A', queryType: 'metrics' });
      openOptions();
      expect(screen.queryByLabelText('Call site')).not.toBeInTheDocument();
    });
  });

  describe('span heatmap and span profile', () => {
    it('writes the service and an operation of it, picked from Jaeger', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A', queryType: 'spanHeatmap' }, ds);
      expect(screen.queryByLabelText('Label selector')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Percentile')).not.toBeInTheDocument();
      expect(screen.getByLabelText('Operation')).toBeDisabled();
      await pick('Service', 'api');
      expect(getResource).toHaveBeenCalledWith('trace-services');
      await pick('Operation', 'POST /generate');
      expect(getResource).toHaveBeenCalledWith('trace-operations', { service: 'api' });
      type('Min duration', '20ms');
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'spanHeatmap',
        service: 'api',
        operation: 'POST /generate',
        minDuration: '20ms',
      });
    });

    it("lists the chosen service's operations, and forgets the operation with the service", async () => {
      const { last } = await renderEditor({
        refId: 'A',
        queryType: 'spanProfile',
        service: 'api',
        operation: 'GET /health',
      });
      expect(screen.getByLabelText('Operation')).toHaveValue('GET /health');
      await pick('Service', 'frontend');
      expect(last()).toEqual({ refId: 'A', queryType: 'spanProfile', service: 'frontend', operation: undefined });
      fireEvent.click(screen.getByLabelText('Operation'));
      const options = await screen.findAllByRole('option');
      expect(options.map((o) => o.textContent)).toEqual(['GET /', 'render']);
    });

    it('writes the percentile, profile type, limit and max nodes of a span profile, and clears them', async () => {
      const { ds, getResource } = fakeDatasource({
        'profile-types': [
          {
            id: 'memory:alloc_space:bytes:space:bytes',
            name: 'memory',
            sampleType: 'alloc_space',
            sampleUnit: 'bytes',
          },
        ],
      });
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'spanProfile', service: 'api' }, ds);
      expect(screen.getByLabelText('Profile type')).toHaveValue('process_cpu:cpu:nanoseconds:cpu:nanoseconds');
      await pick('Profile type', /alloc_space/);
      expect(getResource).toHaveBeenCalledWith('profile-types', rangeParams);
      fireEvent.change(screen.getByLabelText('Percentile'), { target: { value: '99.5' } });
      const runs = onRunQuery.mock.calls.length;
      fireEvent.blur(screen.getByLabelText('Percentile'));
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
      openOptions();
      expect(screen.getByLabelText('Limit')).toHaveAttribute('placeholder', '500');
      fireEvent.change(screen.getByLabelText('Limit'), { target: { value: '1000' } });
      fireEvent.change(screen.getByLabelText('Max nodes'), { target: { value: '2048' } });
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'spanProfile',
        service: 'api',
        profileTypeId: 'memory:alloc_space:bytes:space:bytes',
        percentile: 99.5,
        limit: 1000,
        maxNodes: 2048,
      });
      for (const label of ['Percentile', 'Limit', 'Max nodes']) {
        fireEvent.change(screen.getByLabelText(label), { target: { value: '' } });
      }
      type('Min duration', ' ');
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'spanProfile',
        service: 'api',
        profileTypeId: 'memory:alloc_space:bytes:space:bytes',
      });
    });

    it('writes a slow tail: its threshold, the SLO switch and the requests diagnosed', async () => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'tail', service: 'api' });
      expect(screen.getByLabelText('Percentile')).toHaveAttribute('placeholder', '95');
      fireEvent.change(screen.getByLabelText('Percentile'), { target: { value: '99' } });
      const runs = onRunQuery.mock.calls.length;
      fireEvent.blur(screen.getByLabelText('Percentile'));
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
      expect(screen.getByText('20 tail requests')).toBeInTheDocument();
      openOptions();
      expect(screen.queryByLabelText('Max nodes')).not.toBeInTheDocument();
      fireEvent.change(screen.getByLabelText('Tail requests'), { target: { value: '40' } });
      expect(last()).toEqual({ refId: 'A', queryType: 'tail', service: 'api', percentile: 99, maxTraces: 40 });
      fireEvent.change(screen.getByLabelText('Percentile'), { target: { value: '' } });
      fireEvent.click(screen.getByLabelText('Over the SLO'));
      expect(last()).toEqual({ refId: 'A', queryType: 'tail', service: 'api', maxTraces: 40, slo: true });
    });

    it.each([
      [{ percentile: 99, slo: true }, 'Percentile, Min duration and SLO exclude each other: keep one'],
      [{ minDuration: '1s', slo: true }, 'Percentile, Min duration and SLO exclude each other: keep one'],
      [{ percentile: 100 }, 'Above 0 and below 100, e.g. 95: the slowest 5% of spans'],
    ])('says what is wrong with the tail %j', async (set, message) => {
      await renderEditor({ refId: 'A', queryType: 'tail', service: 'api', ...set });
      expect(screen.getByText(message)).toBeInTheDocument();
    });

    it('opens the options to say the tail requests are too many', async () => {
      await renderEditor({ refId: 'A', queryType: 'tail', service: 'api', maxTraces: 500 });
      expect(screen.getByRole('button', { name: /^Options/ })).toHaveAttribute('aria-expanded', 'true');
      expect(screen.getByText('A whole number from 1 to 100')).toBeInTheDocument();
    });

    it('sums up the traces read and the max nodes, and the linked profile of a heatmap', async () => {
      await renderEditor({
        refId: 'A',
        queryType: 'spanHeatmap',
        service: 'api',
        limit: 200,
        profileTypeId: 'memory:alloc_space:bytes:space:bytes',
      });
      expect(screen.getByText('200 traces')).toBeInTheDocument();
      expect(screen.getByText('Max nodes 16384')).toBeInTheDocument();
      expect(screen.getByText('Profile memory · alloc_space')).toBeInTheDocument();
      expect(screen.queryByLabelText('Profile type')).not.toBeInTheDocument();
      openOptions();
      expect(screen.getByLabelText('Profile type')).toHaveValue('memory:alloc_space:bytes:space:bytes');
    });

    it.each([
      [{ percentile: 100 }, 'Above 0 and below 100, e.g. 95: the slowest 5% of spans'],
      [{ percentile: -5 }, 'Above 0 and below 100, e.g. 95: the slowest 5% of spans'],
      [{ percentile: 95, minDuration: '20ms' }, 'Min duration and Percentile exclude each other: clear one'],
      [{ percentile: 95, minDuration: '250' }, 'Min duration and Percentile exclude each other: clear one'],
    ])('says what is wrong with %j', async (set, message) => {
      await renderEditor({ refId: 'A', queryType: 'spanProfile', service: 'api', ...set });
      expect(screen.getByText(message)).toBeInTheDocument();
      expect(screen.getByLabelText('Percentile')).toHaveAttribute('aria-invalid', 'true');
    });

    it.each([
      { percentile: 95, minDuration: '0' },
      { percentile: 95, minDuration: '$min' },
      { percentile: 0.5 },
      { minDuration: '1.5s' },
    ])('lets %j through', async (set) => {
      await renderEditor({ refId: 'A', queryType: 'spanProfile', service: 'api', ...set });
      expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    });

    it.each([
      [2000, 'A whole number from 1 to 1500'],
      [12.5, 'A whole number from 1 to 1500'],
    ])('opens the options to say limit %d is wrong', async (limit, message) => {
      await renderEditor({ refId: 'A', queryType: 'spanHeatmap', service: 'api', limit });
      expect(screen.getByRole('button', { name: /^Options/ })).toHaveAttribute('aria-expanded', 'true');
      expect(screen.getByText(message)).toBeInTheDocument();
    });

    it('checks the minimum duration', async () => {
      await renderEditor({ refId: 'A', queryType: 'spanHeatmap', service: 'api' });
      fireEvent.change(screen.getByLabelText('Min duration'), { target: { value: '20 ms' } });
      expect(screen.getByText('A duration like 500ms, 1.5s or 1m30s')).toBeInTheDocument();
    });

    it('keeps the service, operation and percentile when the type is switched', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'spanProfile' });
      await pick('Service', 'api');
      await pick('Operation', 'GET /health');
      fireEvent.change(screen.getByLabelText('Percentile'), { target: { value: '90' } });
      await pick('Query type', /^Span heatmap/);
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      expect(screen.getByLabelText('Operation')).toHaveValue('GET /health');
      // The heatmap ignores the percentile (it shows every span); back on the profile it is there.
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'spanHeatmap',
        service: 'api',
        operation: 'GET /health',
        percentile: 90,
      });
      await pick('Query type', /^Slow requests/);
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      await pick('Query type', /^Span profile/);
      expect(screen.getByLabelText('Service')).toHaveValue('api');
      expect(screen.getByLabelText('Operation')).toHaveValue('GET /health');
      expect(screen.getByLabelText('Percentile')).toHaveValue(90);
    });
  });

  describe('GPU metrics', () => {
    it('picks metrics from the catalogue, by title and unit, and the aggregation', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A', queryType: 'gpuMetrics' }, ds);
      expect(screen.getByRole('radio', { name: 'Per GPU' })).toBeChecked();
      fireEvent.click(screen.getByLabelText('Metrics'));
      const fb = await screen.findByRole('option', { name: /^Framebuffer used \(MiB\)/ });
      expect(fb).toHaveTextContent('fb_used: Device memory in use.');
      expect(fb).not.toHaveTextContent('mbytes');
      fireEvent.click(screen.getByRole('option', { name: /^GPU utilisation \(percent\)/ }));
      expect(getResource).toHaveBeenCalledWith('gpu-metrics');
      fireEvent.click(screen.getByRole('radio', { name: 'Fleet' }));
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'gpuMetrics',
        metrics: ['gpu_utilization'],
        aggregation: 'fleet',
      });
    });

    it('shows the chosen metrics by title and unit before the menu opens', async () => {
      const { ds, getResource } = fakeDatasource();
      await renderEditor({ refId: 'A', queryType: 'gpuMetrics', metrics: ['fb_used_percent'] }, ds);
      expect(screen.getByText('Framebuffer used (percent)')).toBeInTheDocument();
      cleanup();
      // A variable, or a name this version does not know, as it is.
      await renderEditor({ refId: 'A', queryType: 'gpuMetrics', metrics: ['$metric'] }, ds);
      expect(screen.getByText('$metric')).toBeInTheDocument();
      expect(getResource).not.toHaveBeenCalled();
    });

    it('filters by host, and lists the GPUs of the chosen hosts', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A', queryType: 'gpuMetrics', metrics: ['gpu_utilization'] }, ds);
      await pick('Hosts', 'gpu-node-2');
      expect(getResource).toHaveBeenCalledWith('gpu-label-values', { role: 'host', ...rangeParams });
      await pick('GPUs', 'GPU-5fd4bd2f');
      expect(getResource).toHaveBeenCalledWith('gpu-label-values', {
        role: 'gpu',
        hosts: ['gpu-node-2'],
        ...rangeParams,
      });
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'gpuMetrics',
        metrics: ['gpu_utilization'],
        hosts: ['gpu-node-2'],
        gpus: ['GPU-5fd4bd2f'],
      });
    });
  });

  describe('GPU class', () => {
    it('has the GPU filters only', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A', queryType: 'gpuClass' }, ds);
      expect(screen.queryByLabelText('Metrics')).not.toBeInTheDocument();
      expect(screen.queryByRole('radio', { name: 'Fleet' })).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Label selector')).not.toBeInTheDocument();
      await pick('Models', 'NVIDIA H100 80GB HBM3');
      await pick('Pods', 'triton-0');
      await pick('Namespaces', 'inference');
      for (const role of ['model', 'pod', 'namespace']) {
        expect(getResource).toHaveBeenCalledWith('gpu-label-values', { role, ...rangeParams });
      }
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'gpuClass',
        models: ['NVIDIA H100 80GB HBM3'],
        pods: ['triton-0'],
        namespaces: ['inference'],
      });
    });
  });

  describe('local GPUs (NVML)', () => {
    it('writes the query type and the view, devices by default', async () => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A' });
      await pick('Query type', /^Local GPUs \(NVML\)/);
      expect(last()).toEqual({ refId: 'A', queryType: 'gpuLocal' });
      expect(screen.getByRole('radio', { name: 'Devices' })).toBeChecked();
      expect(screen.queryByLabelText('Label selector')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Hosts')).not.toBeInTheDocument();
      const runs = onRunQuery.mock.calls.length;
      fireEvent.click(screen.getByRole('radio', { name: 'XID events' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'gpuLocal', view: 'xid' });
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
    });

    it.each([
      ['Processes', 'processes'],
      ['XID events', 'xid'],
      ['Series', 'series'],
      ['Class', 'class'],
    ])('writes the %s view as %s, and back to devices', async (label, view) => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'gpuLocal' });
      fireEvent.click(screen.getByRole('radio', { name: label }));
      expect(last()).toEqual({ refId: 'A', queryType: 'gpuLocal', view });
      expect(screen.getByRole('radio', { name: label })).toBeChecked();
      fireEvent.click(screen.getByRole('radio', { name: 'Devices' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'gpuLocal', view: 'devices' });
    });
  });

  describe('GPU kernels', () => {
    it('writes the trace ID and a file picked from kernel-files', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last } = await renderEditor({ refId: 'A' }, ds);
      await pick('Query type', /^GPU kernels/);
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels' });
      type('Trace ID', '$trace_id');
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id' });
      await pick('File', /^infer\/infer_4bf92f35/);
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'kernels',
        traceId: '$trace_id',
        file: 'infer/infer_4bf92f3577b34da6a3ce929d0e0e4736.pt.trace.json',
      });
      expect(getResource).toHaveBeenCalledWith('kernel-files', {});
      fireEvent.click(screen.getByLabelText('File'));
      // When the file was written, in the user's time zone (UTC here) and how long ago.
      expect(await screen.findByRole('option')).toHaveTextContent(
        /^infer\/infer_4bf92f35.*2\.0 KiB · written 2026-01-01 00:00 \(.+ ago\) · trace 4bf92f3577b34da6a3ce929d0e0e4736$/
      );
      fireEvent.change(screen.getByLabelText('Trace ID'), { target: { value: '4bf92f35' } });
      expect(screen.getByText('A trace ID has 16 or 32 hex digits')).toBeInTheDocument();
    });

    it('writes the view, summary by default, and keeps it only for a type that has it', async () => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'kernels', traceId: '$trace_id' });
      // The backend's default view, shown without writing it.
      expect(screen.getByRole('radio', { name: 'Summary' })).toBeChecked();
      const runs = onRunQuery.mock.calls.length;
      fireEvent.click(screen.getByRole('radio', { name: 'Launches' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id', view: 'launches' });
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
      expect(screen.getByRole('radio', { name: 'Launches' })).toBeChecked();
      fireEvent.click(screen.getByRole('radio', { name: 'Critical path' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id', view: 'criticalPath' });
      fireEvent.click(screen.getByRole('radio', { name: 'Summary' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id', view: 'summary' });
      fireEvent.click(screen.getByRole('radio', { name: 'Launches' }));
      // The triage parser would refuse the kernels query's view, and the kernels parser triage's.
      await pick('Query type', /^GPU incidents \(triage\)/);
      expect(last().view).toBeUndefined();
      fireEvent.click(screen.getByRole('radio', { name: 'Signals' }));
      await pick('Query type', /^GPU kernels/);
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id' });
      expect(screen.getByRole('radio', { name: 'Summary' })).toBeChecked();
    });

    it('shows a view it does not know as none chosen', async () => {
      await renderEditor({ refId: 'A', queryType: 'kernels', view: 'signals' } as HsiQuery);
      expect(screen.getByRole('radio', { name: 'Summary' })).not.toBeChecked();
      expect(screen.getByRole('radio', { name: 'Launches' })).not.toBeChecked();
    });

    it('writes the timeline view, summary by default, and only fields the backend reads', async () => {
      const { last, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'kernels', traceId: '$trace_id' });
      // The backend's default, shown without writing it.
      expect(screen.getByRole('radio', { name: 'Summary' })).toBeChecked();
      const runs = onRunQuery.mock.calls.length;
      fireEvent.click(screen.getByRole('radio', { name: 'Timeline' }));
      const query = last();
      expect(query).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id', view: 'timeline' });
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
      expect(screen.getByRole('radio', { name: 'Timeline' })).toBeChecked();
      const kernelKeys = ['refId', 'queryType', ...QUERY_TYPE_INFO.kernels.fields];
      expect(Object.keys(query).filter((k) => !kernelKeys.includes(k))).toEqual([]);
      fireEvent.click(screen.getByRole('radio', { name: 'Summary' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'kernels', traceId: '$trace_id', view: 'summary' });
    });

    it("keeps the timeline view for the kernels query only: the other types' parsers refuse it", async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'kernels', view: 'timeline' });
      await pick('Query type', /^GPU incidents \(triage\)/);
      expect(last().view).toBeUndefined();
      expect(screen.getByRole('radio', { name: 'Failures' })).toBeChecked();
      await pick('Query type', /^GPU kernels/);
      expect(screen.getByRole('radio', { name: 'Summary' })).toBeChecked();
    });

    it('writes the diff view and its baseline: another request, or recent requests matching a glob', async () => {
      const target = '4bf92f3577b34da6a3ce929d0e0e4736';
      // A profile diff's side, left by switching the type: kept as it is.
      const { last, onRunQuery } = await renderEditor({
        refId: 'A',
        queryType: 'kernels',
        traceId: target,
        baseline: { from: 'now-1h' },
      });
      // The backend's default view, shown without writing it; no baseline fields outside the diff.
      expect(screen.getByRole('radio', { name: 'Summary' })).toBeChecked();
      expect(screen.queryByLabelText('Baseline trace ID')).not.toBeInTheDocument();
      const runs = onRunQuery.mock.calls.length;
      fireEvent.click(screen.getByRole('radio', { name: 'Diff' }));
      expect(last()).toEqual({
        refId: 'A',
        queryType: 'kernels',
        traceId: target,
        baseline: { from: 'now-1h' },
        view: 'diff',
      });
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);
      // Empty fields say what the backend falls back to.
      expect(screen.getByLabelText('Baseline trace ID')).toHaveAttribute('placeholder', 'recent requests');
      expect(screen.getByLabelText('Recent')).toHaveAttribute('placeholder', '10');
      expect(screen.getByLabelText('Baseline files matching')).toHaveAttribute(
        'placeholder',
        "the target's directory, any day"
      );

      type('Baseline trace ID', '00f067aa0ba902b7');
      expect(last().baseline).toEqual({ from: 'now-1h', traceId: '00f067aa0ba902b7' });
      fireEvent.change(screen.getByLabelText('Recent'), { target: { value: '20' } });
      expect(screen.getByText('A trace ID or recent requests, not both: clear one')).toBeInTheDocument();
      type('Baseline trace ID', '');
      expect(last().baseline).toEqual({ from: 'now-1h', recent: 20 });
      expect(screen.queryByText('A trace ID or recent requests, not both: clear one')).not.toBeInTheDocument();
      fireEvent.change(screen.getByLabelText('Recent'), { target: { value: '500' } });
      expect(screen.getByText('A whole number from 1 to 100')).toBeInTheDocument();
      fireEvent.change(screen.getByLabelText('Recent'), { target: { value: '5' } });
      fireEvent.change(screen.getByLabelText('Baseline files matching'), { target: { value: 'infer_[0-9' } });
      expect(screen.getByText('A [ of the glob is not closed')).toBeInTheDocument();
      type('Baseline files matching', 'bucket:fleet/infer/*/infer_*');
      const query = last();
      expect(query).toEqual({
        refId: 'A',
        queryType: 'kernels',
        traceId: target,
        view: 'diff',
        baseline: { from: 'now-1h', recent: 5, match: 'bucket:fleet/infer/*/infer_*' },
      });
      // Every key is one the backend reads of a kernels query (or Grafana's own).
      for (const key of Object.keys(query)) {
        expect(['refId', 'queryType', ...QUERY_TYPE_INFO.kernels.fields]).toContain(key);
      }
      // Back to the summary: the baseline stays for the next diff, the backend ignores it.
      fireEvent.click(screen.getByRole('radio', { name: 'Summary' }));
      expect(last().view).toBe('summary');
      expect(screen.queryByLabelText('Baseline trace ID')).not.toBeInTheDocument();
    });

    it('drops the diff view when the query type changes to one without it', async () => {
      const { last } = await renderEditor({
        refId: 'A',
        queryType: 'kernels',
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        view: 'diff',
      });
      await pick('Query type', /^GPU incidents \(triage\)/);
      expect(last().view).toBeUndefined();
      expect(last().queryType).toBe('triage');
    });
  });
  describe('GPU incidents (triage)', () => {
    /** What the backend reads of a triage query (pkg/models/fields.go), and what Grafana adds. */
    const triageKeys = ['refId', 'queryType', ...QUERY_TYPE_INFO.triage.fields];

    it('writes the view, classes by label, services from Jaeger and the GPU filters', async () => {
      const { ds, getResource } = fakeDatasource();
      const { last, onRunQuery } = await renderEditor({ refId: 'A' }, ds);
      await pick('Query type', /^GPU incidents \(triage\)/);
      expect(last()).toEqual({ refId: 'A', queryType: 'triage' });
      // The backend's default view, shown without writing it.
      expect(screen.getByRole('radio', { name: 'Failures' })).toBeChecked();
      expect(screen.queryByLabelText('Label selector')).not.toBeInTheDocument();
      expect(screen.queryByLabelText('Metrics')).not.toBeInTheDocument();
      const runs = onRunQuery.mock.calls.length;
      fireEvent.click(screen.getByRole('radio', { name: 'Signals' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'triage', view: 'signals' });
      expect(onRunQuery).toHaveBeenCalledTimes(runs + 1);

      fireEvent.click(screen.getByLabelText('Classes'));
      const options = await screen.findAllByRole('option');
      expect(options.map((o) => o.textContent)).toEqual([
        expect.stringMatching(/^Container OOM kill/),
        expect.stringMatching(/^CUDA OOM while serving/),
        expect.stringMatching(/^CUDA OOM at model load/),
        expect.stringMatching(/^XID error/),
        expect.stringMatching(/^Uncorrectable ECC/),
        expect.stringMatching(/^Row-remap failure/),
        expect.stringMatching(/^PCIe replays/),
        expect.stringMatching(/^Memory envelope/),
      ]);
      await act(async () => {
        fireEvent.click(screen.getByRole('option', { name: /^CUDA OOM at model load/ }));
      });
      await pick('Services', 'api');
      expect(getResource).toHaveBeenCalledWith('trace-services');
      await pick('Hosts', 'gpu-node-1');
      await pick('Namespaces', 'inference');
      const query = last();
      expect(query).toEqual({
        refId: 'A',
        queryType: 'triage',
        view: 'signals',
        classes: ['cudaOOMLoad'],
        services: ['api'],
        hosts: ['gpu-node-1'],
        namespaces: ['inference'],
      });
      // Only fields the backend reads, with values its parser takes.
      expect(Object.keys(query).filter((k) => !triageKeys.includes(k))).toEqual([]);
      expect(query.classes?.every((c) => TRIAGE_CLASSES.includes(c))).toBe(true);
    });

    it.each([
      ['Requests', 'requests'],
      ['Signals', 'signals'],
    ])('writes the %s view as %s, and back to failures', async (label, view) => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'triage' });
      fireEvent.click(screen.getByRole('radio', { name: label }));
      expect(last()).toEqual({ refId: 'A', queryType: 'triage', view });
      expect(screen.getByRole('radio', { name: label })).toBeChecked();
      fireEvent.click(screen.getByRole('radio', { name: 'Failures' }));
      expect(last()).toEqual({ refId: 'A', queryType: 'triage', view: 'failures' });
    });

    it('shows the chosen classes by label, a variable as it is, before the menu opens', async () => {
      const { ds, getResource } = fakeDatasource();
      await renderEditor({ refId: 'A', queryType: 'triage', classes: ['xid'] }, ds);
      expect(screen.getByText('XID error')).toBeInTheDocument();
      cleanup();
      await renderEditor({ refId: 'A', queryType: 'triage', classes: ['$class' as 'xid'] }, ds);
      expect(screen.getByText('$class')).toBeInTheDocument();
      expect(getResource).not.toHaveBeenCalled();
    });

    it('removes the last class and service from the query', async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'triage', classes: ['ecc'], services: ['api'] });
      fireEvent.click(screen.getByRole('button', { name: /Remove Uncorrectable ECC/ }));
      fireEvent.click(screen.getByRole('button', { name: /Remove api/ }));
      expect(last()).toEqual({ refId: 'A', queryType: 'triage', classes: undefined, services: undefined });
    });

    it("keeps the filters when the type is switched, but not another type's view", async () => {
      const { last } = await renderEditor({ refId: 'A', queryType: 'gpuLocal', view: 'xid' });
      await pick('Query type', /^GPU incidents \(triage\)/);
      // gpuLocal's view would be refused by the triage parser.
      expect(last().view).toBeUndefined();
      expect(screen.getByRole('radio', { name: 'Failures' })).toBeChecked();
      fireEvent.click(screen.getByRole('radio', { name: 'Requests' }));
      await pick('Hosts', 'gpu-node-2');
      await pick('Query type', /^GPU class/);
      expect(last()).toEqual({ refId: 'A', queryType: 'gpuClass', view: 'requests', hosts: ['gpu-node-2'] });
      await pick('Query type', /^GPU incidents \(triage\)/);
      expect(screen.getByRole('radio', { name: 'Requests' })).toBeChecked();
      expect(last()).toEqual({ refId: 'A', queryType: 'triage', view: 'requests', hosts: ['gpu-node-2'] });
      await pick('Query type', /^Local GPUs \(NVML\)/);
      expect(last().view).toBeUndefined();
      expect(screen.getByRole('radio', { name: 'Devices' })).toBeChecked();
    });
  });
});
