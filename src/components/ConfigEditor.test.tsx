import React, { useState } from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';

import { ConfigEditor } from './ConfigEditor';
import { HsiOptions, HsiSecureJsonData } from '../types';

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
    fireEvent.click(screen.getAllByLabelText('Bearer token')[2]); // Jaeger's radio group
    expect(last().jsonData.jaegerAuth).toBe('bearer');
    fireEvent.change(screen.getByLabelText('Jaeger token'), { target: { value: 's3cret' } });
    expect(last().secureJsonData).toEqual({ jaegerBearerToken: 's3cret' });
    expect(JSON.stringify(last().jsonData)).not.toContain('s3cret');
  });

  it('takes basic auth user in jsonData and the password in secureJsonData', () => {
    const { last } = renderEditor(settings({ jsonData: { prometheusAuth: 'basic' } }));
    fireEvent.change(screen.getByLabelText('Prometheus user'), { target: { value: 'grafana' } });
    fireEvent.change(screen.getByLabelText('Prometheus password'), { target: { value: 'pw' } });
    expect(last().jsonData).toEqual({ prometheusAuth: 'basic', prometheusBasicAuthUser: 'grafana' });
    expect(last().secureJsonData).toEqual({ prometheusBasicAuthPassword: 'pw' });
  });

  it('shows a stored secret as configured and resets it', () => {
    const { last } = renderEditor(
      settings({ jsonData: { pyroscopeAuth: 'bearer' }, secureJsonFields: { pyroscopeBearerToken: true } })
    );
    const token = screen.getByLabelText('Pyroscope token');
    expect(token).toBeDisabled();
    expect(token).toHaveValue('configured');
    fireEvent.click(screen.getAllByRole('button', { name: 'Reset' })[0]);
    expect(last().secureJsonFields.pyroscopeBearerToken).toBe(false);
    expect(last().secureJsonData).toEqual({ pyroscopeBearerToken: '' });
  });

  it('stores TLS options and the timeout', () => {
    const { last } = renderEditor(settings());
    fireEvent.click(screen.getByLabelText('Prometheus skip TLS verify'));
    fireEvent.change(screen.getByLabelText('Prometheus TLS server name'), { target: { value: 'prom.internal' } });
    fireEvent.change(screen.getByLabelText('Prometheus timeout'), { target: { value: '12' } });
    fireEvent.change(screen.getByLabelText('Prometheus CA certificate'), { target: { value: '-----BEGIN CERT' } });
    expect(last().jsonData).toEqual({
      prometheusTlsSkipVerify: true,
      prometheusTlsServerName: 'prom.internal',
      prometheusTimeoutSeconds: 12,
    });
    expect(last().secureJsonData).toEqual({ prometheusTlsCACert: '-----BEGIN CERT' });
  });
});
