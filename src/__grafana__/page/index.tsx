// The page the browser test (../browser.test.ts) opens in Chromium: the plugin's editors and
// Grafana's flame graph, rendered with the real @grafana/ui components in Grafana's dark theme.
// Grafana itself is not running, so the few services the components reach for (template
// variables, the data source list, resource calls) answer from tables below.
import React, { useState } from 'react';
import { createRoot } from 'react-dom/client';
import {
  applyFieldOverrides,
  createTheme,
  DataSourceInstanceSettings,
  DataSourceSettings,
  dateTime,
  PanelData,
  LoadingState,
  getDefaultTimeRange,
} from '@grafana/data';
import { FlameGraph, checkFields, getMessageCheckFieldsResult } from '@grafana/flamegraph';
import { setDataSourceSrv, setTemplateSrv, DataSourceSrv, TemplateSrv } from '@grafana/runtime';
import { ErrorBoundaryAlert, GlobalStyles, PanelChrome, Table, ThemeContext } from '@grafana/ui';

import { ConfigEditor } from '../../components/ConfigEditor';
import { QueryEditor } from '../../components/QueryEditor';
import { DataSource } from '../../datasource';
import { HsiOptions, HsiQuery, HsiSecureJsonData } from '../../types';
import { Fixture } from '../answers';
import { toFrames } from '../frames';

export type Scene =
  | { kind: 'editor'; query: HsiQuery }
  | { kind: 'config'; jsonData: HsiOptions; secureJsonFields?: Record<string, boolean> }
  | { kind: 'flamegraph'; title: string; fixture: Fixture; frame: number }
  | { kind: 'table'; title: string; fixture: Fixture; frameName: string };

declare global {
  interface Window {
    hsiRender: (scene: Scene) => void;
    __grafana_public_path__: string;
  }
}

const theme = createTheme({ colors: { mode: 'dark' } });
// Icons load from Grafana's public folder; the test serves @grafana/ui's copy there.
window.__grafana_public_path__ = '/public/';

setTemplateSrv({
  getVariables: () => [],
  replace: (s?: string) => s ?? '',
  containsTemplate: () => false,
  updateTimeRange: () => {},
} as unknown as TemplateSrv);

const traceDatasources = [
  { uid: 'jaeger-prod', name: 'Jaeger', type: 'jaeger', meta: { id: 'jaeger', info: { logos: { small: '' } } } },
  { uid: 'tempo-prod', name: 'Tempo', type: 'tempo', meta: { id: 'tempo', info: { logos: { small: '' } } } },
] as unknown as DataSourceInstanceSettings[];

setDataSourceSrv({
  getList: () => traceDatasources,
  getInstanceSettings: (ref?: string | { uid?: string }) =>
    traceDatasources.find((d) => d.uid === (typeof ref === 'string' ? ref : ref?.uid)),
  get: () => Promise.reject(new Error('no data source instances in this page')),
  reload: () => {},
  registerRuntimeDataSource: () => {},
} as unknown as DataSourceSrv);

const from = dateTime(Date.now() - 3600 * 1000);
const to = dateTime();
const range = { from, to, raw: { from: 'now-1h', to: 'now' } };

/** The answers the demo's backend would give the editors' pickers. */
const resources: Record<string, unknown> = {
  'profile-types': [
    {
      id: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
      name: 'process_cpu',
      sampleType: 'cpu',
      sampleUnit: 'nanoseconds',
    },
    { id: 'memory:alloc_space:bytes:space:bytes', name: 'memory', sampleType: 'alloc_space', sampleUnit: 'bytes' },
  ],
  services: ['ai-detector', 'ai-enrichment', 'nemotron-backend'],
  'label-names': ['env', 'service_name'],
  'label-values': ['prod', 'staging'],
  traces: [
    {
      traceId: '00f067aa0ba902b700f067aa0ba902b7',
      rootService: 'nemotron-backend',
      rootOperation: 'POST /api/detect',
      start: Date.now() - 60000,
      durationMs: 412,
      spans: 14,
      services: ['nemotron-backend', 'ai-detector', 'ai-enrichment'],
    },
  ],
  'trace-services': ['ai-detector', 'ai-enrichment', 'nemotron-backend'],
  'gpu-metrics': [
    { name: 'gpu_utilization', description: 'GPU utilisation', unit: 'percent' },
    { name: 'fb_used', description: 'Framebuffer used', unit: 'mbytes' },
  ],
  'gpu-label-values': ['gpu-node-1', 'gpu-node-2'],
  'kernel-files': { files: [] },
};

function datasource() {
  const ds = new DataSource({ id: 1, uid: 'hsi', jsonData: {} } as unknown as DataSourceInstanceSettings<HsiOptions>);
  ds.getResource = ((path: string) => Promise.resolve(resources[path])) as DataSource['getResource'];
  return ds;
}

function Editor({ initial }: { initial: HsiQuery }) {
  const [query, setQuery] = useState(initial);
  const [ds] = useState(datasource);
  return <QueryEditor query={query} onChange={setQuery} onRunQuery={() => {}} datasource={ds} range={range} />;
}

function Config({ scene }: { scene: Extract<Scene, { kind: 'config' }> }) {
  const [options, setOptions] = useState({
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
    jsonData: scene.jsonData,
    secureJsonFields: scene.secureJsonFields ?? {},
  } as DataSourceSettings<HsiOptions, HsiSecureJsonData>);
  return <ConfigEditor options={options} onOptionsChange={setOptions} />;
}

/**
 * The flame graph panel as Grafana 13 renders it (public/app/plugins/panel/flamegraph/
 * FlameGraphPanel.tsx inside PanelChrome and ErrorBoundaryAlert): fields checked first, then
 * FlameGraph on data.series[0]. PanelDataErrorView's text is the panel's message.
 */
function FlameGraphPanel({ title, data }: { title: string; data: PanelData }) {
  const wrongFields = checkFields(data.series[0]);
  return (
    <PanelChrome title={title} width={1360} height={860}>
      {() => (
        <ErrorBoundaryAlert>
          {wrongFields ? (
            <div data-testid="panel-message">{getMessageCheckFieldsResult(wrongFields)}</div>
          ) : (
            <FlameGraph data={data.series[0]} stickyHeader={false} getTheme={() => theme} />
          )}
        </ErrorBoundaryAlert>
      )}
    </PanelChrome>
  );
}

/**
 * The table panel as Grafana renders one frame of an answer: field config applied
 * (applyFieldOverrides, which sets each field's display processor from its unit), then
 * @grafana/ui's Table inside PanelChrome.
 */
function TablePanel({ title, fixture, frameName }: { title: string; fixture: Fixture; frameName: string }) {
  const frame = toFrames(fixture).find((f) => f.name === frameName);
  if (!frame) {
    return <div data-testid="panel-message">no frame named {frameName}</div>;
  }
  const [shown] = applyFieldOverrides({
    data: [frame],
    fieldConfig: { defaults: {}, overrides: [] },
    replaceVariables: (v: string) => v,
    theme,
    timeZone: 'utc',
  });
  return (
    <PanelChrome title={title} width={1360} height={520}>
      {(innerWidth, innerHeight) => <Table data={shown} width={innerWidth} height={innerHeight} />}
    </PanelChrome>
  );
}

function SceneView({ scene }: { scene: Scene }) {
  switch (scene.kind) {
    case 'editor':
      return <Editor initial={scene.query} />;
    case 'config':
      return <Config scene={scene} />;
    case 'flamegraph': {
      const frames = toFrames(scene.fixture);
      const series = scene.frame === 0 ? frames : [frames[scene.frame]];
      const data: PanelData = { series, state: LoadingState.Done, timeRange: getDefaultTimeRange() };
      return <FlameGraphPanel title={scene.title} data={data} />;
    }
    case 'table':
      return <TablePanel title={scene.title} fixture={scene.fixture} frameName={scene.frameName} />;
  }
}

window.hsiRender = (scene: Scene) => {
  const root = document.getElementById('root')!;
  createRoot(root).render(
    <ThemeContext.Provider value={theme}>
      <GlobalStyles />
      <div style={{ padding: 16, width: 1360 }} data-testid="scene">
        <SceneView scene={scene} />
      </div>
    </ThemeContext.Provider>
  );
};
