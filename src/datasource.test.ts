import { DataSourceInstanceSettings } from '@grafana/data';

import { DataSource } from './datasource';
import { HsiOptions } from './types';

const replace = jest.fn((s: string) => s.replace('$service', 'nemotron-backend').replace('$span', 'abc123'));

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

  it('does not invent fields a query did not have', () => {
    const out = ds.applyTemplateVariables({ refId: 'A', queryType: 'profile' }, {});
    expect(out.labelSelector).toBeUndefined();
    expect(out.spanSelector).toBeUndefined();
  });

  it('skips hidden queries', () => {
    expect(ds.filterQuery({ refId: 'A', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A' })).toBe(true);
  });

  it('defaults to a CPU flame graph', () => {
    expect(ds.getDefaultQuery('explore' as never)).toEqual({
      queryType: 'profile',
      labelSelector: '{}',
      profileTypeId: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
    });
  });
});
