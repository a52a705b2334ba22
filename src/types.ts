import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

/** Query types this build answers; later ones (metrics, trace, gpuClass, ...) join this list. */
export const QUERY_TYPES = [
  {
    value: 'profile',
    label: 'Profile',
    description: 'Flame graph for a label selector and profile type (Pyroscope)',
  },
] as const;

export type QueryType = (typeof QUERY_TYPES)[number]['value'];

export const DEFAULT_PROFILE_TYPE = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

/**
 * One panel query. Field names for profiles are those of Grafana's Pyroscope data source, so its
 * dashboards and the trace-to-profile link work when pointed at this plugin.
 */
export interface HsiQuery extends DataQuery {
  queryType?: QueryType;
  labelSelector?: string;
  profileTypeId?: string;
  maxNodes?: number;
  spanSelector?: string[];
  groupBy?: string[];
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
] as const;

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

export interface HsiOptions extends DataSourceJsonData, UpstreamJsonData {
  /** Pyroscope to push the plugin's own profiles to; empty: off. */
  selfProfilingUrl?: string;
}

/** Secrets: stored encrypted by Grafana, sent only to the backend, never back to the browser. */
export type HsiSecureJsonData = {
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
