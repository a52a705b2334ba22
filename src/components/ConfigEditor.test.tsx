import React, { useState } from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';

import { ConfigEditor } from './ConfigEditor';
import { THRESHOLD_ROWS } from './config/ThresholdsSection';
import { GPU_THRESHOLD_WINDOWS, GPU_THRESHOLDS, UPSTREAM_TIMEOUT_SECONDS } from '../generated/vocabulary';
import { HsiOptions, HsiSecureJsonData } from '../types';

// The real picker lists Grafana's data sources through getDataSourceSrv; this one records its
// filter and offers one Tempo data source.
jest.mock('@grafana/runtime', () => {
  const React = jest.requireActual('react');
  return {
    ...jest.requireActual('@grafana/runtime'),
    DataSourcePicker: (props: {
      type?: string[];
      current?: string | null;
      inputId?: string;
      onChange: (ds: unknown) => void;
      onClear?: () => void;
    }) =>
      React.createElement(
        'div',
        { 'data-testid': 'trace-picker', 'data-type': JSON.stringify(props.type), 'data-current': props.current ?? '' },
        React.createElement('input', { id: props.inputId, readOnly: true, value: props.current ?? '' }),
        React.createElement(
          'button',
          { type: 'button', onClick: () => props.onChange({ uid: 'tempo-prod', type: 'tempo', name: 'Tempo' }) },
          'Pick Tempo'
        ),
        React.createElement('button', { type: 'button', onClick: () => props.onClear?.() }, 'Clear picker')
      ),
  };
});

beforeAll(() => {
  // The authentication method's Select watches its menu's scrolling; jsdom has no such observer.
  Object.assign(global, {
    IntersectionObserver: class {
      observe() {}
      unobserve() {}
      disconnect() {}
    },
  });
});

type Settings = DataSourceSettings<HsiOptions, HsiSecureJsonData>;

function settings(patch: Partial<Settings> = {}): Settings {
  return {
    id: 1,
    uid: 'hsi',
    orgId: 1,
    name: 'HSI Profiling',
    type: 'hsi-profiling-datasource',
    typeName: 'HSI Profiling',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    withCredentials: false,
    readOnly: false,
    version: 1,
    jsonData: {},
    secureJsonFields: {},
    ...patch,
  } as Settings;
}

/** Renders the editor the way Grafana does: it owns the settings and passes every change back. */
function renderEditor(initial: Settings) {
  const changes: Settings[] = [];
  function Host() {
    const [options, setOptions] = useState(initial);
    return (
      <ConfigEditor
        options={options}
        onOptionsChange={(o) => {
          changes.push(o);
          setOptions(o);
        }}
      />
    );
  }
  render(<Host />);
  return { last: () => changes[changes.length - 1], changes };
}

describe('ConfigEditor', () => {
  it('has a section per upstream', () => {
    renderEditor(settings());
    for (const name of ['Pyroscope', 'Prometheus', 'Jaeger']) {
      expect(screen.getByLabelText(`${name} URL`)).toBeInTheDocument();
    }
    expect(screen.getByLabelText('Pyroscope tenant')).toBeInTheDocument();
    expect(screen.queryByLabelText('Jaeger tenant')).not.toBeInTheDocument();
  });

  it('shows one trace store at a time: the one the backend reads, or the one picked', () => {
    renderEditor(settings({ jsonData: { tempoUrl: 'http://tempo:3200' } }));
    // Only Tempo's URL is set: Tempo is the trace store, and its section is shown.
    expect(screen.getByRole('radio', { name: 'Tempo' })).toBeChecked();
    expect(screen.getByLabelText('Tempo URL')).toHaveValue('http://tempo:3200');
    expect(screen.getByLabelText('Tempo tenant')).toBeInTheDocument();
    expect(screen.queryByLabelText('Jaeger URL')).not.toBeInTheDocument();
  });

  it('writes the picked trace store, keeping the other one stored', () => {
    const { last } = renderEditor(settings({ jsonData: { jaegerUrl: 'http://jaeger:16686' } }));
    expect(screen.getByRole('radio', { name: 'Jaeger' })).toBeChecked();
    fireEvent.click(screen.getByRole('radio', { name: 'Tempo' }));
    type('Tempo URL', 'http://tempo:3200');
    type('Tempo tenant', 'team-gpu');
    expect(last().jsonData).toEqual({
      jaegerUrl: 'http://jaeger:16686',
      traceStore: 'tempo',
      tempoUrl: 'http://tempo:3200',
      tempoTenant: 'team-gpu',
    });
  });

  it('writes each URL under the jsonData name provisioning uses', () => {
    const { last } = renderEditor(settings());
    fireEvent.change(screen.getByLabelText('Pyroscope URL'), { target: { value: 'http://pyroscope:4040' } });
    fireEvent.change(screen.getByLabelText('Prometheus URL'), { target: { value: 'http://prometheus:9090' } });
    fireEvent.change(screen.getByLabelText('Jaeger URL'), { target: { value: 'http://jaeger:16686' } });
    fireEvent.change(screen.getByLabelText('Pyroscope tenant'), { target: { value: 'team-gpu' } });
    expect(last().jsonData).toEqual({
      pyroscopeUrl: 'http://pyroscope:4040',
      prometheusUrl: 'http://prometheus:9090',
      jaegerUrl: 'http://jaeger:16686',
      pyroscopeTenant: 'team-gpu',
    });
  });

  it('keeps a bearer token in secureJsonData only', () => {
    const { last } = renderEditor(settings());
    openAuth('Jaeger');
    chooseAuth('Bearer token');
    expect(last().jsonData.jaegerAuth).toBe('bearer');
    // Under the token field, until one is typed.
    expect(screen.getByRole('alert')).toHaveTextContent('Bearer authentication needs a token');
    fireEvent.change(screen.getByLabelText('Jaeger token'), { target: { value: 's3cret' } });
    expect(last().secureJsonData).toEqual({ jaegerBearerToken: 's3cret' });
    expect(JSON.stringify(last().jsonData)).not.toContain('s3cret');
  });

  it('takes basic auth user in jsonData and the password in secureJsonData', () => {
    // Basic without a user is what the backend refuses: the section opens by itself and says so.
    const { last } = renderEditor(settings({ jsonData: { prometheusAuth: 'basic' } }));
    expect(screen.getByText('Basic authentication needs a user')).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText(/^User/), { target: { value: 'grafana' } });
    fireEvent.change(screen.getByLabelText(/^Password/), { target: { value: 'pw' } });
    expect(last().jsonData).toEqual({ prometheusAuth: 'basic', prometheusBasicAuthUser: 'grafana' });
    expect(last().secureJsonData).toEqual({ prometheusBasicAuthPassword: 'pw' });
    expect(screen.getByText('Basic authentication as grafana')).toBeInTheDocument();
  });

  it('shows a stored secret as configured and resets it', () => {
    const { last } = renderEditor(
      settings({ jsonData: { pyroscopeAuth: 'bearer' }, secureJsonFields: { pyroscopeBearerToken: true } })
    );
    // Nothing to fix: folded, and the line under its title says what is set.
    expect(screen.queryByLabelText('Pyroscope token')).not.toBeInTheDocument();
    expect(screen.getByText('Bearer token')).toBeInTheDocument();
    openAuth('Pyroscope');
    const token = screen.getByLabelText('Pyroscope token');
    expect(token).toBeDisabled();
    expect(token).toHaveValue('configured');
    fireEvent.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last().secureJsonFields.pyroscopeBearerToken).toBe(false);
    expect(last().secureJsonData).toEqual({ pyroscopeBearerToken: '' });
  });

  it('stores TLS options behind their toggles, and the timeout', () => {
    const { last } = renderEditor(settings());
    fireEvent.change(screen.getByLabelText('Prometheus timeout'), { target: { value: '12' } });
    openAuth('Prometheus');
    // No certificate box until its toggle is on.
    expect(screen.queryByLabelText(/^CA Certificate/)).not.toBeInTheDocument();
    expect(screen.queryByLabelText(/^Client Certificate/)).not.toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Skip TLS certificate validation'));
    fireEvent.click(screen.getByLabelText('TLS Client Authentication'));
    fireEvent.change(screen.getByLabelText(/^ServerName/), { target: { value: 'prom.internal' } });
    fireEvent.click(screen.getByLabelText('Add self-signed certificate'));
    fireEvent.change(screen.getByLabelText(/^CA Certificate/), { target: { value: '-----BEGIN CERT' } });
    expect(last().jsonData).toEqual({
      prometheusTlsSkipVerify: true,
      prometheusTlsServerName: 'prom.internal',
      prometheusTimeoutSeconds: 12,
    });
    expect(last().secureJsonData).toEqual({ prometheusTlsCACert: '-----BEGIN CERT' });

    // Off again: the backend uses a certificate whenever one is set, so turning it off forgets it.
    fireEvent.click(screen.getByLabelText('Add self-signed certificate'));
    expect(last().secureJsonData).toEqual({ prometheusTlsCACert: '' });
    expect(last().secureJsonFields.prometheusTlsCACert).toBe(false);
    fireEvent.click(screen.getByLabelText('Skip TLS certificate validation'));
    fireEvent.click(screen.getByLabelText('TLS Client Authentication'));
    expect(last().jsonData).toEqual({ prometheusTimeoutSeconds: 12 });
  });

  it('shows stored certificates as configured and asks for the missing half of a client pair', () => {
    renderEditor(
      settings({ secureJsonFields: { jaegerTlsCACert: true, jaegerTlsClientCert: true } as Record<string, boolean> })
    );
    // The backend refuses a client certificate without its key: open, and said on the line.
    expect(screen.getByText(/TLS client authentication needs both the certificate and the key/)).toBeInTheDocument();
    expect(screen.getByLabelText('Add self-signed certificate')).toBeChecked();
    expect(screen.getByLabelText('TLS Client Authentication')).toBeChecked();
    expect(screen.getByLabelText(/^CA Certificate/)).toHaveValue('configured');
    expect(screen.getByLabelText(/^Client Certificate/)).toHaveValue('configured');
    expect(screen.getByLabelText(/^Client Key/)).toHaveValue('');
  });

  it('says when a provisioned auth kind is unknown', () => {
    renderEditor(settings({ jsonData: { jaegerAuth: 'digest' } as unknown as HsiOptions }));
    expect(screen.getByText('Unknown authentication "digest": pick one')).toBeInTheDocument();
  });
});

describe('ConfigEditor checks what the backend checks', () => {
  const START = 'Start with http:// or https://, e.g. http://localhost:9090';

  it('flags an upstream URL without http:// or https://, or with credentials in it', () => {
    renderEditor(settings());
    for (const bad of ['prometheus:9090', 'ftp://prometheus:9090', 'localhost']) {
      type('Prometheus URL', bad);
      expect([bad, screen.queryByText(START) !== null]).toEqual([bad, true]);
    }
    type('Prometheus URL', 'http://user:pw@prometheus:9090');
    expect(screen.getByText('No user or password in the URL: see Authentication')).toBeInTheDocument();
    for (const good of ['http://prometheus:9090', 'HTTPS://prom.example.com/prefix/', '']) {
      type('Prometheus URL', good);
      expect([good, screen.queryByRole('alert')]).toEqual([good, null]);
    }
    // The message is under the field it is about.
    type('Jaeger URL', 'jaeger:16686');
    expect(screen.getByLabelText('Jaeger URL')).toHaveAttribute('aria-describedby');
    const described = screen.getByLabelText('Jaeger URL').getAttribute('aria-describedby')!;
    expect(document.getElementById(described)).toHaveTextContent(
      'Start with http:// or https://, e.g. http://localhost:16686'
    );
  });

  it('flags a timeout outside the backend bounds', () => {
    const { last } = renderEditor(settings());
    const message = `Seconds from ${UPSTREAM_TIMEOUT_SECONDS.min} to ${UPSTREAM_TIMEOUT_SECONDS.max}`;
    for (const [value, bad] of [
      ['0', true],
      ['0.5', true],
      ['301', true],
      ['-3', true],
      [String(UPSTREAM_TIMEOUT_SECONDS.min), false],
      [String(UPSTREAM_TIMEOUT_SECONDS.max), false],
      ['2.5', false],
      ['', false],
    ] as const) {
      type('Pyroscope timeout', value);
      expect([value, screen.queryByText(message) !== null]).toEqual([value, bad]);
    }
    expect('pyroscopeTimeoutSeconds' in last().jsonData).toBe(false);
    // A provisioning file may quote it.
    renderEditor(settings({ jsonData: { jaegerTimeoutSeconds: '900' } as unknown as HsiOptions }));
    expect(screen.getByText(message)).toBeInTheDocument();
  });

  it('flags a self-profiling URL the backend would ignore', () => {
    const { last } = renderEditor(settings());
    open('Self-profiling');
    type('Self-profiling Pyroscope URL', 'pyroscope:4040');
    expect(screen.getByText('Start with http:// or https://, e.g. http://localhost:4040')).toBeInTheDocument();
    type('Self-profiling Pyroscope URL', 'http://pyroscope:4040');
    expect(last().jsonData).toEqual({ selfProfilingUrl: 'http://pyroscope:4040' });
    type('Self-profiling Pyroscope URL', '');
    expect('selfProfilingUrl' in last().jsonData).toBe(false);
  });
});

describe('ConfigEditor keys', () => {
  it('writes every upstream setting under the key the backend reads, secrets only in secureJsonData', () => {
    const { last } = renderEditor(settings());
    for (const [name, key] of [
      ['Pyroscope', 'pyroscope'],
      ['Prometheus', 'prometheus'],
      ['Jaeger', 'jaeger'],
      ['Tempo', 'tempo'],
    ] as const) {
      if (key === 'tempo') {
        // One trace store's settings at a time: Tempo's once it is picked.
        fireEvent.click(screen.getByRole('radio', { name: 'Tempo' }));
      }
      type(`${name} URL`, `https://${key}.example.com`);
      if (key !== 'jaeger') {
        type(`${name} tenant`, 'team');
      }
      type(`${name} timeout`, '45');
      openAuth(name);
      chooseAuth('Basic authentication');
      fireEvent.change(screen.getByLabelText(/^User/), { target: { value: 'u' } });
      fireEvent.change(screen.getByLabelText(/^Password/), { target: { value: `pw-${key}` } });
      chooseAuth('Bearer token');
      fireEvent.change(screen.getByLabelText(`${name} token`), { target: { value: `token-${key}` } });
      fireEvent.click(screen.getByLabelText('Add self-signed certificate'));
      fireEvent.change(screen.getByLabelText(/^CA Certificate/), { target: { value: `ca-${key}` } });
      fireEvent.click(screen.getByLabelText('TLS Client Authentication'));
      fireEvent.change(screen.getByLabelText(/^ServerName/), { target: { value: `${key}.internal` } });
      fireEvent.change(screen.getByLabelText(/^Client Certificate/), { target: { value: `cert-${key}` } });
      fireEvent.change(screen.getByLabelText(/^Client Key/), { target: { value: `key-${key}` } });
      fireEvent.click(screen.getByLabelText('Skip TLS certificate validation'));
      // One section open at a time: plugin-ui's Auth gives its fields fixed ids.
      fireEvent.click(screen.getByRole('button', { name: 'Collapse section Authentication and TLS' }));
    }
    const json = last().jsonData as Record<string, unknown>;
    const secure = last().secureJsonData as Record<string, string>;
    for (const key of ['pyroscope', 'prometheus', 'jaeger', 'tempo']) {
      expect(json).toMatchObject({
        [`${key}Url`]: `https://${key}.example.com`,
        [`${key}TimeoutSeconds`]: 45,
        [`${key}Auth`]: 'bearer',
        [`${key}BasicAuthUser`]: 'u',
        [`${key}TlsServerName`]: `${key}.internal`,
        [`${key}TlsSkipVerify`]: true,
      });
      expect(secure).toEqual(
        expect.objectContaining({
          [`${key}BasicAuthPassword`]: `pw-${key}`,
          [`${key}BearerToken`]: `token-${key}`,
          [`${key}TlsCACert`]: `ca-${key}`,
          [`${key}TlsClientCert`]: `cert-${key}`,
          [`${key}TlsClientKey`]: `key-${key}`,
        })
      );
    }
    expect(json).toMatchObject({
      pyroscopeTenant: 'team',
      prometheusTenant: 'team',
      tempoTenant: 'team',
      traceStore: 'tempo',
    });
    expect(Object.keys(json).sort()).toEqual(
      ['pyroscope', 'prometheus', 'jaeger', 'tempo']
        .flatMap((k) =>
          ['Url', 'TimeoutSeconds', 'Auth', 'BasicAuthUser', 'TlsServerName', 'TlsSkipVerify'].map((s) => k + s)
        )
        .concat(['pyroscopeTenant', 'prometheusTenant', 'tempoTenant', 'traceStore'])
        .sort()
    );
    expect(Object.keys(secure)).toHaveLength(20);
    // No secret in jsonData.
    for (const v of Object.values(secure)) {
      expect(JSON.stringify(json)).not.toContain(v);
    }
  });
});

/** Opens an upstream's authentication and TLS settings (folded unless something needs fixing). */
function openAuth(upstream: 'Pyroscope' | 'Prometheus' | 'Jaeger' | 'Tempo') {
  const section = screen.getByRole('heading', { name: upstream }).closest('div')!.parentElement!;
  fireEvent.click(within(section).getByRole('button', { name: 'Expand section Authentication and TLS' }));
}

/** Picks an authentication method in the one open Auth section. */
function chooseAuth(label: string) {
  fireEvent.keyDown(screen.getByLabelText('Authentication method'), { key: 'ArrowDown' });
  fireEvent.click(screen.getByText(label, { selector: '[role="option"] *' }));
}

/** Opens a collapsed section by its title. */
const open = (title: string) => fireEvent.click(screen.getByRole('button', { name: `Expand section ${title}` }));
const type = (label: string, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });

describe('ConfigEditor settings sections', () => {
  it('keeps sections collapsed unless one of their keys is set', () => {
    renderEditor(settings({ jsonData: { latencyRedMs: 2000 } }));
    expect(screen.queryByLabelText('Minimum step')).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Series limit')).not.toBeInTheDocument();
    expect(screen.getByLabelText('Red from (ms)')).toHaveValue(2000);
    open('Profiles');
    expect(screen.getByLabelText('Minimum step')).toHaveAttribute('placeholder', '15s');
  });

  it('shows what a provisioning file stored, quoted numbers and empty entries included', () => {
    const provisioned = {
      minStep: 30,
      gpuMaxSeries: '800',
      dcgmMetricNames: { power: '', sm_clock: ' my_sm_clock ' },
      dcgmLabelNames: 'node',
      gpuThresholds: { computeBoundPct: '90' },
    } as unknown as HsiOptions;
    const { changes } = renderEditor(settings({ jsonData: provisioned }));
    expect(screen.getByLabelText('Minimum step')).toHaveValue('30');
    expect(screen.getByText('A duration such as 15s, 1m or 1d')).toBeInTheDocument();
    expect(screen.getByLabelText('Series limit')).toHaveValue(800);
    expect(screen.getByLabelText('metric 1 from')).toHaveValue('power');
    expect(screen.getByLabelText('metric 2 to')).toHaveValue(' my_sm_clock ');
    expect(screen.getByLabelText('Host label')).toHaveValue('');
    expect(screen.getByLabelText('Compute-bound above %')).toHaveValue(90);
    expect(changes).toHaveLength(0);
  });

  it('writes minStep as a duration string and removes it when emptied', () => {
    const { last } = renderEditor(settings({ jsonData: { pyroscopeUrl: 'http://p:4040' } }));
    open('Profiles');
    type('Minimum step', '30s');
    expect(last().jsonData).toEqual({ pyroscopeUrl: 'http://p:4040', minStep: '30s' });
    type('Minimum step', 'soon');
    expect(screen.getByText('A duration such as 15s, 1m or 1d')).toBeInTheDocument();
    type('Minimum step', '');
    expect(last().jsonData).toEqual({ pyroscopeUrl: 'http://p:4040' });
    expect('minStep' in last().jsonData).toBe(false);
  });

  it('writes the DCGM numbers as numbers and label names as an object', () => {
    const { last } = renderEditor(settings());
    open('GPU series (DCGM)');
    expect(screen.getByLabelText('Series limit')).toHaveAttribute('placeholder', '500');
    type('Series limit', '800');
    type('PCIe generation', '5');
    type('Lanes', '8');
    type('Host label', 'node');
    type('Pod label', 'pod');
    expect(last().jsonData).toEqual({
      gpuMaxSeries: 800,
      pcieGeneration: 5,
      pcieWidth: 8,
      dcgmLabelNames: { host: 'node', pod: 'pod' },
    });
    type('Lanes', '3');
    expect(screen.getByText('One of 1, 2, 4, 8, 12, 16, 32')).toBeInTheDocument();
    type('Series limit', '0');
    expect(screen.getByText('A whole number from 1 to 10000')).toBeInTheDocument();
    type('Series limit', '');
    type('Host label', '');
    expect(last().jsonData.dcgmLabelNames).toEqual({ pod: 'pod' });
    type('Pod label', '');
    expect(last().jsonData).toEqual({ pcieGeneration: 5, pcieWidth: 3 });
  });

  it('writes cAdvisor metric and label names as objects', () => {
    const { last, changes } = renderEditor(settings());
    open('Request join and links');
    fireEvent.click(screen.getByRole('button', { name: 'Add metric' }));
    type('cAdvisor metric 1 from', 'container_cpu_cfs_throttled_seconds_total');
    type('cAdvisor metric 1 to', 'k8s:throttled_seconds');
    type('Pod name label', 'kubernetes_pod_name');
    expect(last().jsonData).toEqual({
      cadvisorMetricNames: { container_cpu_cfs_throttled_seconds_total: 'k8s:throttled_seconds' },
      cadvisorLabelNames: { pod: 'kubernetes_pod_name' },
    });
    type('Container name label', 'kubernetes-container');
    expect(screen.getByText('A label name: letters, digits and _ (e.g. Hostname)')).toBeInTheDocument();
    type('cAdvisor metric 1 from', 'container_cpu_throttled');
    expect(screen.getByText('Not a cAdvisor series the plugin reads')).toBeInTheDocument();
    type('Pod name label', '');
    type('Container name label', '');
    fireEvent.click(screen.getByRole('button', { name: /remove cAdvisor metric 1/i }));
    expect(last().jsonData).toEqual({});
    expect(changes.length).toBeGreaterThan(2);
  });

  it('adds and removes metric name overrides', () => {
    const { last, changes } = renderEditor(settings());
    open('GPU series (DCGM)');
    fireEvent.click(screen.getByRole('button', { name: 'Add metric' }));
    type('metric 1 from', 'gpu_utilization');
    expect(changes).toHaveLength(0); // half-filled rows are not written
    type('metric 1 to', 'my_gpu_util');
    expect(changes).toHaveLength(1);
    expect(last().jsonData.dcgmMetricNames).toEqual({ gpu_utilization: 'my_gpu_util' });

    fireEvent.click(screen.getByRole('button', { name: 'Add metric' }));
    type('metric 2 from', 'power');
    type('metric 2 to', 'node_gpu_power_watts');
    expect(last().jsonData.dcgmMetricNames).toEqual({ gpu_utilization: 'my_gpu_util', power: 'node_gpu_power_watts' });

    fireEvent.click(screen.getByRole('button', { name: 'Remove metric 1' }));
    expect(last().jsonData.dcgmMetricNames).toEqual({ power: 'node_gpu_power_watts' });
    expect(screen.getByLabelText('metric 1 from')).toHaveValue('power');
    fireEvent.click(screen.getByRole('button', { name: 'Remove metric 1' }));
    expect('dcgmMetricNames' in last().jsonData).toBe(false);
    expect(screen.queryByLabelText('metric 1 from')).not.toBeInTheDocument();
  });

  it('flags metric overrides the backend would reject', () => {
    renderEditor(settings({ jsonData: { dcgmMetricNames: { gpu_util: 'x', fb_used_percent: 'y', power: '1bad' } } }));
    expect(screen.getByLabelText('metric 1 from')).toHaveValue('gpu_util');
    expect(screen.getByText('Not a GPU metric of the catalogue')).toBeInTheDocument();
    expect(screen.getByText(/fb_used_percent is computed from fb_used and fb_free/)).toBeInTheDocument();
    expect(screen.getByText('A metric name such as DCGM_FI_DEV_GPU_UTIL')).toBeInTheDocument();
  });

  it('writes thresholds into gpuThresholds with their types and drops emptied keys', () => {
    const { last } = renderEditor(settings());
    open('GPU classification thresholds');
    expect(screen.getByLabelText('Compute-bound above %')).toHaveAttribute('placeholder', '80');
    expect(screen.getByLabelText('Max-clock window')).toHaveAttribute('placeholder', '24h');
    type('Compute-bound above %', '90');
    type('PCIe-bound above ×link', '0.5');
    type('Share window', '2h');
    expect(last().jsonData).toEqual({
      gpuThresholds: { computeBoundPct: 90, pcieBoundLinkShare: 0.5, shareWindow: '2h' },
    });

    type('and clock below ×max', '1.5');
    expect(screen.getByText('A number above 0 up to 1')).toBeInTheDocument();
    type('Max-clock window', '30s');
    expect(screen.getByText('Whole seconds from 1m to 7d')).toBeInTheDocument();

    for (const label of ['Compute-bound above %', 'PCIe-bound above ×link', 'Share window', 'and clock below ×max']) {
      type(label, '');
    }
    expect(last().jsonData.gpuThresholds).toEqual({ clockMaxWindow: '30s' });
    type('Max-clock window', '');
    expect('gpuThresholds' in last().jsonData).toBe(false);
  });

  it("offers every threshold the backend reads, with the backend's default and range", () => {
    renderEditor(settings());
    open('GPU classification thresholds');
    const rows = THRESHOLD_ROWS.flat();
    expect(rows.map((d) => d.key).sort()).toEqual(
      [...Object.keys(GPU_THRESHOLDS), ...Object.keys(GPU_THRESHOLD_WINDOWS)].sort()
    );
    for (const d of rows) {
      const backend = d.key in GPU_THRESHOLDS ? GPU_THRESHOLDS[d.key as keyof typeof GPU_THRESHOLDS] : undefined;
      const shown = backend?.default ?? GPU_THRESHOLD_WINDOWS[d.key as keyof typeof GPU_THRESHOLD_WINDOWS].default;
      expect([d.key, screen.getByLabelText(d.label).getAttribute('placeholder')]).toEqual([d.key, String(shown)]);
      if (backend) {
        const rangeMessage = new RegExp(`^A number (from|above) ${backend.min} (to|up to) ${backend.max}$`);
        type(d.label, String(backend.max + 1));
        expect(screen.getByText(rangeMessage)).toBeInTheDocument();
        type(d.label, String(backend.max));
        expect(screen.queryByText(rangeMessage)).not.toBeInTheDocument();
        type(d.label, String(backend.min));
        expect([d.key, screen.queryByText(rangeMessage) !== null]).toEqual([d.key, backend.minOpen]);
        type(d.label, '');
      }
    }
  });

  it('writes the join settings and the host map', () => {
    const { last } = renderEditor(settings());
    open('Request join and links');
    type('Span host attribute', 'k8s.node.name');
    type('Span GPU attribute', 'gpu.uuid');
    type('GPU dashboard UID', 'my-gpus');
    type('Request dashboard UID', 'bad uid!');
    expect(screen.getByText('A dashboard UID: letters, digits, - and _, at most 40')).toBeInTheDocument();
    type('Request dashboard UID', 'my-requests');
    fireEvent.click(screen.getByRole('button', { name: 'Add host' }));
    type('host 1 from', 'node-a.example.com');
    type('host 1 to', 'node-a');
    expect(last().jsonData).toEqual({
      joinHostAttribute: 'k8s.node.name',
      joinGpuAttribute: 'gpu.uuid',
      gpuDashboardUid: 'my-gpus',
      requestDashboardUid: 'my-requests',
      joinHostMap: { 'node-a.example.com': 'node-a' },
    });
  });

  it('picks the trace data source among Jaeger and Tempo and stores its uid and type', () => {
    const { last } = renderEditor(settings());
    open('Request join and links');
    const picker = screen.getByTestId('trace-picker');
    expect(JSON.parse(picker.dataset.type!)).toEqual(['jaeger', 'tempo']);
    expect(screen.getByLabelText('Trace data source')).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Pick Tempo' }));
    expect(last().jsonData).toEqual({ traceDatasourceUid: 'tempo-prod', traceDatasourceType: 'tempo' });
    expect(screen.getByTestId('trace-picker')).toHaveAttribute('data-current', 'tempo-prod');
    fireEvent.click(screen.getByRole('button', { name: 'Clear picker' }));
    expect(last().jsonData).toEqual({});
  });

  it('writes latency thresholds as numbers and checks their order', () => {
    const { last } = renderEditor(settings());
    open('Slow requests');
    type('Yellow from (ms)', '300');
    type('Red from (ms)', '800');
    expect(last().jsonData).toEqual({ latencyYellowMs: 300, latencyRedMs: 800 });
    type('Yellow from (ms)', '900');
    expect(screen.getByText('Yellow must start below red (defaults 500 and 1000)')).toBeInTheDocument();
    type('Yellow from (ms)', '-5');
    expect(screen.getByText('A positive number of milliseconds')).toBeInTheDocument();
    type('Yellow from (ms)', '');
    type('Red from (ms)', '');
    expect(last().jsonData).toEqual({});
  });

  it('writes valid latency histograms and keeps the last valid list on a typo', () => {
    const { last } = renderEditor(settings());
    open('Slow requests');
    const valid = [{ metric: 'rpc_duration_seconds', serviceLabels: ['svc'], endpointLabel: 'method' }];
    type('Latency histograms', JSON.stringify(valid));
    expect(last().jsonData.latencyHistograms).toEqual(valid);

    type('Latency histograms', '[{"metric": "rpc_duration_seconds",');
    expect(screen.getByText(/^Not valid JSON: .*The last valid list stays in use\.$/)).toBeInTheDocument();
    expect(last().jsonData.latencyHistograms).toEqual(valid);
    expect(screen.getByLabelText('Latency histograms')).toHaveValue('[{"metric": "rpc_duration_seconds",');

    type('Latency histograms', '[{"metric": "rpc", "serviceLabels": [], "endpointLabel": "method"}]');
    expect(screen.getByText(/Histogram 1: "serviceLabels" must list one or more label names/)).toBeInTheDocument();
    type('Latency histograms', '[]');
    expect(screen.getByText(/A non-empty list/)).toBeInTheDocument();
    expect(last().jsonData.latencyHistograms).toEqual(valid);

    type('Latency histograms', '');
    expect('latencyHistograms' in last().jsonData).toBe(false);
  });

  it('starts the latency histograms from the defaults on request', () => {
    const { last } = renderEditor(settings());
    open('Slow requests');
    fireEvent.click(screen.getByRole('button', { name: 'Edit the defaults' }));
    expect(last().jsonData.latencyHistograms).toEqual([
      { metric: 'http_request_duration_seconds', serviceLabels: ['service'], endpointLabel: 'endpoint' },
      {
        metric: 'http_server_request_duration_seconds',
        serviceLabels: ['service_name', 'job'],
        endpointLabel: 'http_route',
      },
    ]);
    expect((screen.getByLabelText('Latency histograms') as HTMLTextAreaElement).value).toContain('"http_route"');
  });
});

describe('ConfigEditor local GPUs (NVML)', () => {
  it('is off and collapsed by default', () => {
    renderEditor(settings());
    expect(screen.queryByLabelText('Read local GPUs')).not.toBeInTheDocument();
    open('Local GPUs (NVML)');
    expect(screen.getByLabelText('Read local GPUs')).not.toBeChecked();
  });

  it('writes nvmlEnabled true and removes the key when switched off', () => {
    const { last } = renderEditor(settings({ jsonData: { pyroscopeUrl: 'http://p:4040' } }));
    open('Local GPUs (NVML)');
    fireEvent.click(screen.getByLabelText('Read local GPUs'));
    expect(last().jsonData).toEqual({ pyroscopeUrl: 'http://p:4040', nvmlEnabled: true });
    expect(screen.getByLabelText('Read local GPUs')).toBeChecked();
    fireEvent.click(screen.getByLabelText('Read local GPUs'));
    expect(last().jsonData).toEqual({ pyroscopeUrl: 'http://p:4040' });
    expect('nvmlEnabled' in last().jsonData).toBe(false);
  });

  it('opens when set, and flags a value that is not a boolean', () => {
    const { last } = renderEditor(settings({ jsonData: { nvmlEnabled: 'true' } as unknown as HsiOptions }));
    expect(screen.getByLabelText('Read local GPUs')).not.toBeChecked();
    expect(screen.getByText(/Not true or false/)).toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Read local GPUs'));
    expect(last().jsonData).toEqual({ nvmlEnabled: true });
    expect(screen.queryByText(/Not true or false/)).not.toBeInTheDocument();
  });
});

describe('ConfigEditor kernel trace buckets', () => {
  it('adds a bucket with its fields in jsonData and its credentials in secureJsonData only', () => {
    const { last } = renderEditor(settings());
    open('GPU kernel traces');
    fireEvent.click(screen.getByRole('button', { name: 'Add bucket' }));
    fireEvent.change(screen.getByLabelText('bucket 1 name'), { target: { value: 'fleet' } });
    fireEvent.change(screen.getByLabelText('bucket 1 bucket'), { target: { value: 'gpu-traces' } });
    fireEvent.change(screen.getByLabelText('bucket 1 prefix'), { target: { value: 'kernels' } });
    fireEvent.change(screen.getByLabelText('bucket 1 endpoint'), { target: { value: 'seaweedfs:8333' } });
    fireEvent.change(screen.getByLabelText('bucket 1 timeout'), { target: { value: '400' } });
    expect(screen.getByText('Timeout: seconds from 1 to 300')).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('bucket 1 timeout'), { target: { value: '10' } });
    expect(screen.queryByText('Timeout: seconds from 1 to 300')).not.toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('bucket 1 plain HTTP'));
    fireEvent.change(screen.getByLabelText('bucket 1 access key'), { target: { value: 'AKIA123' } });
    fireEvent.change(screen.getByLabelText('bucket 1 secret key'), { target: { value: 'sekrit' } });
    expect(last().jsonData.kernelBuckets).toEqual([
      {
        name: 'fleet',
        provider: 's3',
        bucket: 'gpu-traces',
        prefix: 'kernels',
        endpoint: 'seaweedfs:8333',
        timeoutSeconds: 10,
        insecure: true,
      },
    ]);
    expect(last().secureJsonData).toEqual({
      'kernelBucket.fleet.accessKey': 'AKIA123',
      'kernelBucket.fleet.secretKey': 'sekrit',
    });
    expect(JSON.stringify(last().jsonData)).not.toContain('sekrit');
  });

  it("shows each provider's own fields and flags what the backend refuses", () => {
    renderEditor(
      settings({
        jsonData: {
          kernelBuckets: [
            { name: 'az', provider: 'azure', bucket: 'c' },
            { name: 'disk', provider: 'filesystem', directory: 'relative' },
            { name: 'g', provider: 'gcs', bucket: 'b' },
          ],
        },
        secureJsonFields: { 'kernelBucket.g.serviceAccount': true },
      })
    );
    expect(screen.getByText('Set the storage account')).toBeInTheDocument();
    expect(screen.getByLabelText('bucket 1 account key')).toBeInTheDocument();
    expect(screen.getByText('The filesystem provider needs an absolute directory')).toBeInTheDocument();
    expect(screen.queryByLabelText('bucket 2 access key')).not.toBeInTheDocument();
    expect(screen.getByLabelText('bucket 3 service account')).toHaveValue('configured');
  });

  it('forgets a removed bucket and its stored credentials', () => {
    const { last } = renderEditor(
      settings({
        jsonData: { kernelBuckets: [{ name: 'fleet', provider: 's3', bucket: 'b' }] },
        secureJsonFields: { 'kernelBucket.fleet.accessKey': true, 'kernelBucket.fleet.secretKey': true },
      })
    );
    fireEvent.click(screen.getByRole('button', { name: 'Remove bucket 1' }));
    expect(last().jsonData.kernelBuckets).toBeUndefined();
    expect(last().secureJsonFields['kernelBucket.fleet.accessKey']).toBe(false);
    expect(last().secureJsonData).toEqual({ 'kernelBucket.fleet.accessKey': '', 'kernelBucket.fleet.secretKey': '' });
  });
});
