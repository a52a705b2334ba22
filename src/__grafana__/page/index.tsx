// The page the browser test (../browser.test.ts) opens in Chromium: the plugin's editors and
// Grafana's flame graph, rendered with the real @grafana/ui components in Grafana's dark theme.
// Grafana itself is not running, so the few services the components reach for (template
// variables, the data source list, resource calls) answer from tables below.
import React, { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import {
  applyFieldOverrides,
  createTheme,
  DataSourceInstanceSettings,
  DataFrame,
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
import { GPU_CATALOGUE } from '../../generated/vocabulary';
import { HsiOptions, HsiQuery, HsiSecureJsonData } from '../../types';
import { Fixture } from '../answers';
import { toFrames } from '../frames';
import { applyTransformations } from '../transform';
import { DashboardPanel, DashboardPanels, PAGE_PADDING, answeringPanel } from './dashboard';

export type Scene =
  /** click: what to open once the editor is drawn (the Options row, a picker's menu), in order. */
  | { kind: 'editor'; query: HsiQuery; click?: string[] }
  | { kind: 'config'; jsonData: HsiOptions; secureJsonFields?: Record<string, boolean> }
  | { kind: 'flamegraph'; title: string; fixture: Fixture; frame: number }
  | { kind: 'table'; title: string; fixture: Fixture; frameName: string }
  /**
   * A shipped dashboard's panels, each with its own options and field config, on one answer, or
   * on its own: answers holds the answers of the panels that ask the data source themselves, by
   * panel id (a panel that reuses another's through the Dashboard data source gets that one's).
   */
  | { kind: 'dashboard'; panels: DashboardPanel[]; fixture: Fixture; answers?: Record<number, Fixture> };

declare global {
  interface Window {
    hsiRender: (scene: Scene) => void;
    /** The page's theme's colour of a name (green, orange, ...), as hex. */
    hsiColorByName: (name: string) => string;
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
  'trace-operations': ['GET /health', 'POST /api/detect', 'infer'],
  'gpu-metrics': GPU_CATALOGUE.map(({ name, title, description, unit }) => ({ name, title, description, unit })),
  'gpu-label-values': ['gpu-node-1', 'gpu-node-2'],
  'kernel-files': {
    files: [
      {
        file: 'infer/infer_00f067aa0ba902b700f067aa0ba902b7.pt.trace.json',
        size: 48_234_496,
        modified: new Date(Date.now() - 2 * 3600 * 1000).toISOString(),
        traceIds: ['00f067aa0ba902b700f067aa0ba902b7'],
      },
      { file: 'warmup/rank0.pt.trace.json', size: 1_835_008, modified: '2026-01-05T09:30:00Z', traceIds: [] },
    ],
  },
};

function datasource() {
  const ds = new DataSource({ id: 1, uid: 'hsi', jsonData: {} } as unknown as DataSourceInstanceSettings<HsiOptions>);
  ds.getResource = ((path: string) => Promise.resolve(resources[path])) as DataSource['getResource'];
  return ds;
}

/** The next frame, up to a few seconds' worth, until ok() holds; false if it never does. */
async function eachFrameUntil(ok: () => boolean): Promise<boolean> {
  for (let frame = 0; frame < 600; frame++) {
    if (ok()) {
      return true;
    }
    await new Promise(requestAnimationFrame);
  }
  return ok();
}

/**
 * Until the fonts and every icon drawn so far have loaded: pickers size their menus by measuring
 * text (a fallback font measures narrower), and an icon's placeholder is blank.
 */
async function settled() {
  await document.fonts.ready;
  await eachFrameUntil(() => [...document.querySelectorAll('svg')].every((svg) => svg.hasAttribute('data-testid')));
}

/** Clicks each selector in turn once it is on the page (the one before may have to open first). */
async function clickInTurn(selectors: string[]) {
  for (const selector of selectors) {
    await settled();
    if (!(await eachFrameUntil(() => document.querySelector(selector) !== null))) {
      throw new Error(`nothing to click at ${selector}`);
    }
    document.querySelector<HTMLElement>(selector)!.click();
  }
  await settled();
}

/**
 * Grafana's own page has loaded its fonts long before a query editor opens. Pickers measure their
 * options' text once and keep the width: measured in a fallback font, their menus come out too
 * narrow for the text they show.
 */
const fontsLoaded = () =>
  Promise.all(['400 12px Inter', '400 14px Inter', '500 14px Inter'].map((font) => document.fonts.load(font)));

/** The query editor; data-ready once the scene's clicks are done and its fonts and icons drawn. */
function Editor({ scene }: { scene: Extract<Scene, { kind: 'editor' }> }) {
  const [query, setQuery] = useState(scene.query);
  const [ds] = useState(datasource);
  const [fonts, setFonts] = useState(false);
  const [ready, setReady] = useState(false);
  useEffect(() => {
    fontsLoaded().then(() => setFonts(true));
  }, []);
  useEffect(() => {
    if (fonts) {
      clickInTurn(scene.click ?? []).then(() => setReady(true));
    }
  }, [scene, fonts]);
  // As wide as Grafana's query editor in a window of the page's width (the scene's box is wider).
  return (
    <div style={{ maxWidth: 'calc(100vw - 32px)' }} data-testid="editor" data-ready={ready || undefined}>
      {fonts && <QueryEditor query={query} onChange={setQuery} onRunQuery={() => {}} datasource={ds} range={range} />}
    </div>
  );
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
  // Grafana's settings page is as wide as the window less its padding (the scene's box is wider).
  return (
    <div style={{ maxWidth: 'calc(100vw - 32px)' }}>
      <ConfigEditor options={options} onOptionsChange={setOptions} />
    </div>
  );
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

/**
 * A dashboard's panels on their answers: a panel with transformations (one that reuses another's
 * answer through the Dashboard data source) is drawn once @grafana/data has applied them.
 */
function Dashboard({
  panels,
  fixture,
  answers,
}: {
  panels: DashboardPanel[];
  fixture: Fixture;
  answers?: Record<number, Fixture>;
}) {
  const [series] = useState(() => toFrames(fixture));
  const [transformed, setTransformed] = useState<Record<number, DataFrame[]>>();
  const [failed, setFailed] = useState<string>();
  useEffect(() => {
    const each = panels.map(async (p) => {
      const own = answers?.[answeringPanel(p)];
      return [p.id, await applyTransformations(p.transformations ?? [], own ? toFrames(own) : series)] as const;
    });
    Promise.all(each)
      .then((done) => setTransformed(Object.fromEntries(done)))
      .catch((e) => setFailed(String(e)));
  }, [panels, series, answers]);
  if (failed) {
    // A console error fails the test; the message says which.
    console.error(`transformations: ${failed}`);
    return <div data-testid="panel-message">{failed}</div>;
  }
  if (!transformed) {
    return null;
  }
  return (
    <DashboardPanels panels={panels} series={series} transformed={transformed} gridWidth={gridWidth()} theme={theme} />
  );
}

function SceneView({ scene }: { scene: Scene }) {
  switch (scene.kind) {
    case 'editor':
      return <Editor scene={scene} />;
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
    case 'dashboard':
      return <Dashboard panels={scene.panels} fixture={scene.fixture} answers={scene.answers} />;
  }
}

/** The dashboard grid's width: the window's, less the page's padding (and any scroll bar). */
const gridWidth = () => document.documentElement.clientWidth - 2 * PAGE_PADDING;

window.hsiColorByName = (name: string) => theme.visualization.getColorByName(name);

window.hsiRender = (scene: Scene) => {
  const root = document.getElementById('root')!;
  createRoot(root).render(
    <ThemeContext.Provider value={theme}>
      <GlobalStyles />
      <div style={{ padding: PAGE_PADDING, width: scene.kind === 'dashboard' ? undefined : 1360 }} data-testid="scene">
        <SceneView scene={scene} />
      </div>
    </ThemeContext.Provider>
  );
};
