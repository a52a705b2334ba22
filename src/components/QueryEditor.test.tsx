import React from 'react';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { dateTime } from '@grafana/data';

import { QueryEditor } from './QueryEditor';
import { DataSource } from '../datasource';
import { HsiQuery, ProfileType } from '../types';

function fakeDatasource(types: ProfileType[] | Error) {
  const getProfileTypes = jest.fn((_from?: number, _to?: number) =>
    types instanceof Error ? Promise.reject(types) : Promise.resolve(types)
  );
  return { ds: { getProfileTypes } as unknown as DataSource, getProfileTypes };
}

const from = dateTime(1700000000000);
const to = dateTime(1700003600000);
const range = { from, to, raw: { from, to } };

/** Renders the editor and lets its profile-type lookup settle. */
async function renderEditor(query: HsiQuery, ds: DataSource) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  await act(async () => {
    render(<QueryEditor query={query} onChange={onChange} onRunQuery={onRunQuery} datasource={ds} range={range} />);
  });
  return { onChange, onRunQuery };
}

describe('QueryEditor', () => {
  it('offers the query types, the profile type selected for a query without one', async () => {
    const { ds } = fakeDatasource([]);
    await renderEditor({ refId: 'A' }, ds);
    expect(screen.getByRole('radio', { name: 'Profile' })).toBeChecked();
    expect(screen.getByLabelText('Label selector')).toHaveValue('{}');
  });

  it('asks the backend for profile types of the dashboard range', async () => {
    const { ds, getProfileTypes } = fakeDatasource([
      { id: 'memory:alloc_objects:count:space:bytes', name: 'memory', sampleType: 'alloc_objects', sampleUnit: 'count' },
    ]);
    await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
    await waitFor(() => expect(getProfileTypes).toHaveBeenCalledWith(1700000000000, 1700003600000));
  });

  it('writes the label selector when the field loses focus', async () => {
    const { ds } = fakeDatasource([]);
    const { onChange, onRunQuery } = await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
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
    const { ds } = fakeDatasource([]);
    const { onChange } = await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
    fireEvent.change(screen.getByLabelText('Max nodes'), { target: { value: '512' } });
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'profile', maxNodes: 512 });
  });

  it('says why profile types could not be listed', async () => {
    const { ds } = fakeDatasource(Object.assign(new Error('x'), { data: { error: 'Pyroscope is not configured' } }));
    await renderEditor({ refId: 'A', queryType: 'profile' }, ds);
    expect(await screen.findByText('Pyroscope is not configured')).toBeInTheDocument();
  });
});
