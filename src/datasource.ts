import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import { DEFAULT_QUERY, HsiOptions, HsiQuery, ProfileType } from './types';

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
    return {
      ...query,
      labelSelector: query.labelSelector === undefined ? undefined : srv.replace(query.labelSelector, scopedVars),
      profileTypeId: query.profileTypeId === undefined ? undefined : srv.replace(query.profileTypeId, scopedVars),
      spanSelector: query.spanSelector?.map((id) => srv.replace(id, scopedVars)),
      groupBy: query.groupBy?.map((label) => srv.replace(label, scopedVars)),
    };
  }

  filterQuery(query: HsiQuery): boolean {
    return !query.hide;
  }

  /** Profile types with data in the range (Unix ms), for the editor's picker. */
  getProfileTypes(from?: number, to?: number): Promise<ProfileType[]> {
    const params: Record<string, number> = {};
    if (from !== undefined && to !== undefined) {
      params.from = from;
      params.to = to;
    }
    return this.getResource<ProfileType[]>('profile-types', params);
  }
}
