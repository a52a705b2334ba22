// Panels of a shipped dashboard as Grafana 13 renders them: the panel's own field config (defaults
// and overrides) applied to the answer with @grafana/data's applyFieldOverrides, then the panel
// plugin's building blocks from @grafana/ui. Grafana's panel plugins are not published on npm;
// what each one does with its options is mirrored below, citing the Grafana source it follows.
import React from 'react';
import {
  applyFieldOverrides,
  booleanOverrideProcessor,
  cacheFieldDisplayNames,
  DataFrame,
  dataLinksOverrideProcessor,
  DataTransformerConfig,
  DisplayValueAlignmentFactors,
  displayNameOverrideProcessor,
  FieldConfigOptionsRegistry,
  FieldConfigPropertyItem,
  FieldConfigSource,
  FieldDisplay,
  FieldType,
  getDisplayValueAlignmentFactors,
  getFieldDisplayValues,
  getFieldDisplayValuesProxy,
  getFrameDisplayName,
  GrafanaTheme2,
  identityOverrideProcessor,
  numberOverrideProcessor,
  ReduceDataOptions,
  renderTextPanelMarkdown,
  ScopedVars,
  stringOverrideProcessor,
  thresholdsOverrideProcessor,
  ThresholdsMode,
  valueMappingsOverrideProcessor,
  VizOrientation,
} from '@grafana/data';
import { TableCellHeight } from '@grafana/schema';
import {
  BigValue,
  BigValueColorMode,
  BigValueGraphMode,
  BigValueJustifyMode,
  BigValueTextMode,
  Combobox,
  PanelChrome,
  VizRepeater,
} from '@grafana/ui';
import { TableNG } from '@grafana/ui/unstable';

/** A panel of a dashboard's JSON model, as the file holds it. */
export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  options?: Record<string, unknown>;
  fieldConfig?: FieldConfigSource;
  /** Applied to the frames before the field config (transform.ts applies them as Grafana does). */
  transformations?: DataTransformerConfig[];
  targets?: Array<{ refId?: string; datasource?: { uid?: string }; panelId?: number }>;
}

/**
 * The panel whose answer a panel shows: the one its Dashboard data source query names (Grafana's
 * "-- Dashboard --" data source reuses that panel's frames), else its own.
 */
export function answeringPanel(p: DashboardPanel): number {
  const t = p.targets?.[0];
  return t?.datasource?.uid === '-- Dashboard --' && typeof t.panelId === 'number' ? t.panelId : p.id;
}

// react-grid-layout as Grafana's dashboard grid sets it up (public/app/core/constants.ts).
const GRID_CELL_HEIGHT = 30;
const GRID_CELL_VMARGIN = 8;
const GRID_COLUMN_COUNT = 24;
/** The dashboard page's padding on each side of the grid. */
export const PAGE_PADDING = 16;

/** A panel's box in pixels, for a grid width px wide; top relative to the panels shown. */
function box(p: DashboardPanel, gridWidth: number, top: number) {
  const col = (gridWidth - GRID_CELL_VMARGIN * (GRID_COLUMN_COUNT - 1)) / GRID_COLUMN_COUNT;
  const { x, y, w, h } = p.gridPos;
  return {
    left: x * (col + GRID_CELL_VMARGIN),
    top: (y - top) * (GRID_CELL_HEIGHT + GRID_CELL_VMARGIN),
    width: w * col + (w - 1) * GRID_CELL_VMARGIN,
    height: h * GRID_CELL_HEIGHT + (h - 1) * GRID_CELL_VMARGIN,
  };
}

const Unused = () => null;

/** A field config property as Grafana's option registries declare it (only what applying needs). */
function property(
  id: string,
  process: FieldConfigPropertyItem['process'],
  extra: Partial<FieldConfigPropertyItem> = {}
): FieldConfigPropertyItem {
  const custom = id.startsWith('custom.');
  return {
    id,
    path: custom ? id.slice('custom.'.length) : id,
    name: id,
    isCustom: custom,
    process,
    shouldApply: () => true,
    editor: Unused,
    override: Unused,
    ...extra,
  } as FieldConfigPropertyItem;
}

/** Grafana's standard field options (public/app/core/components/OptionsUI/registry.tsx). */
const standardOptions = () => [
  property('unit', stringOverrideProcessor),
  property('min', numberOverrideProcessor, { shouldApply: (f) => f.type === FieldType.number }),
  property('max', numberOverrideProcessor, { shouldApply: (f) => f.type === FieldType.number }),
  property('fieldMinMax', booleanOverrideProcessor, { shouldApply: (f) => f.type === FieldType.number }),
  property('decimals', numberOverrideProcessor, { shouldApply: (f) => f.type === FieldType.number }),
  property('displayName', displayNameOverrideProcessor),
  property('color', identityOverrideProcessor),
  property('noValue', stringOverrideProcessor),
  property('links', dataLinksOverrideProcessor),
  property('mappings', valueMappingsOverrideProcessor, {
    defaultValue: [],
    shouldApply: (f) => f.type !== FieldType.time,
  }),
  property('thresholds', thresholdsOverrideProcessor, {
    defaultValue: {
      mode: ThresholdsMode.Absolute,
      steps: [
        { value: -Infinity, color: 'green' },
        { value: 80, color: 'red' },
      ],
    },
  }),
];

/** The table panel's field options (public/app/plugins/panel/table/addTableCustomConfig.ts). */
const tableOptions = () => [
  property('custom.minWidth', numberOverrideProcessor),
  property('custom.width', numberOverrideProcessor),
  property('custom.align', identityOverrideProcessor, { defaultValue: 'auto' }),
  property('custom.filterable', booleanOverrideProcessor),
  property('custom.wrapText', booleanOverrideProcessor),
  property('custom.wrapHeaderText', booleanOverrideProcessor),
  property('custom.hideFrom.viz', booleanOverrideProcessor, { hideFromDefaults: true }),
  property('custom.footer.reducers', identityOverrideProcessor, { defaultValue: [] }),
  property('custom.cellOptions', identityOverrideProcessor, { defaultValue: { type: 'auto' } }),
  property('custom.inspect', booleanOverrideProcessor, { defaultValue: false }),
];

function registry(type: string) {
  const r = new FieldConfigOptionsRegistry();
  for (const item of [...standardOptions(), ...(type === 'table' ? tableOptions() : [])]) {
    r.register(item);
  }
  return r;
}

/**
 * What Grafana 13's table panel does to a saved panel before it draws it (tableMigrationHandler in
 * public/app/plugins/panel/table/migrations.ts): wrapText moves out of cellOptions to the field
 * level, and custom.hidden becomes custom.hideFrom.viz, which is what TableNG reads.
 */
export function migrateTablePanel(fieldConfig: FieldConfigSource): FieldConfigSource {
  const fc: FieldConfigSource = JSON.parse(JSON.stringify(fieldConfig ?? { defaults: {}, overrides: [] }));
  fc.defaults ??= {};
  fc.overrides ??= [];
  if (fc.defaults.custom?.wrapText === undefined) {
    const legacy = fc.defaults.custom?.cellOptions?.wrapText;
    for (const o of fc.overrides) {
      o.properties = o.properties.flatMap((p) => {
        if (p.id === 'custom.cellOptions' && p.value?.wrapText !== undefined) {
          const { wrapText, ...rest } = p.value;
          return [
            { ...p, value: rest },
            { id: 'custom.wrapText', value: wrapText },
          ];
        }
        return [p];
      });
    }
    fc.defaults.custom = { ...fc.defaults.custom, wrapText: legacy };
    delete fc.defaults.custom.cellOptions?.wrapText;
  }
  for (const o of fc.overrides) {
    o.properties = o.properties.map((p) => (p.id === 'custom.hidden' ? { ...p, id: 'custom.hideFrom.viz' } : p));
  }
  return fc;
}

/**
 * The plugin's defaults under the panel's own field config, as Grafana fills them in when it loads
 * a panel (getPanelOptionsWithDefaults, public/app/features/dashboard/state/getPanelOptionsWithDefaults.ts):
 * each option's default where the panel sets none, and colors from the thresholds.
 */
export function withPluginDefaults(fieldConfig: FieldConfigSource, type: string): FieldConfigSource {
  const fc: FieldConfigSource = JSON.parse(JSON.stringify(fieldConfig));
  for (const item of registry(type).list()) {
    if (item.defaultValue === undefined || item.hideFromDefaults) {
      continue;
    }
    let at: Record<string, unknown> = item.isCustom
      ? (fc.defaults.custom ??= {})
      : (fc.defaults as Record<string, unknown>);
    const path = item.path.split('.');
    for (const key of path.slice(0, -1)) {
      at = (at[key] ??= {}) as Record<string, unknown>;
    }
    at[path[path.length - 1]] ??= JSON.parse(JSON.stringify(item.defaultValue));
  }
  fc.defaults.color ??= { mode: 'thresholds' };
  return fc;
}

/** The page's time range, as ${__url_time_range} writes it. */
export const URL_TIME_RANGE = 'from=now-1h&to=now';

// @grafana/scenes' UriEncode format (variables/interpolation/formatRegistry.ts): encodeURI, then
// the sub-delims it leaves.
const encodeURIStrict = (s: string) =>
  encodeURI(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

/**
 * What Grafana 13 does with a data link's ${...} expressions (@grafana/scenes' sceneInterpolator
 * and its macros, variables/macros/dataMacros.ts): ${__value.raw} is the cell's value,
 * ${__value.text} its display text, ${__data.fields.x} the row's value of field x,
 * ${__url_time_range} the dashboard's range; each value formatted as the expression or the caller
 * asks (getLinksSupplier asks for the URL percent-encoded as a URI). The page has no template
 * variables: any other expression stays as written.
 */
export function interpolate(target: string, scopedVars?: ScopedVars, format?: string | Function): string {
  if (!target) {
    return target ?? '';
  }
  return target.replace(
    /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\${(\w+)(?:\.([^:^}]+))?(?::([^}]+))?}/g,
    (match, var1, var2, fmt2, var3, path, fmt3) => {
      const name = var1 || var2 || var3;
      const fmt = fmt2 || fmt3 || format;
      let value: unknown = match;
      const context = scopedVars?.__dataContext?.value;
      if (name === '__url_time_range') {
        return URL_TIME_RANGE;
      } else if (name === '__value' && context?.rowIndex !== undefined && context.field) {
        const raw = context.field.values[context.rowIndex];
        value = path === 'raw' ? raw : String(context.field.display?.(raw).text ?? raw);
      } else if (name === '__data' && context?.rowIndex !== undefined && path?.startsWith('fields.')) {
        const fields = getFieldDisplayValuesProxy({ frame: context.frame, rowIndex: context.rowIndex });
        value = fields[path.slice('fields.'.length)] ?? '';
      } else {
        return match;
      }
      const text = value === null || value === undefined ? '' : String(value);
      return fmt === 'uriencode' ? encodeURIStrict(text) : text;
    }
  );
}

/** PanelQueryRunner's last step: the panel's field config applied to the frames it got. */
function withFieldConfig(
  series: DataFrame[],
  panel: DashboardPanel,
  fieldConfig: FieldConfigSource,
  theme: GrafanaTheme2
) {
  return applyFieldOverrides({
    data: series,
    fieldConfig,
    fieldConfigRegistry: registry(panel.type),
    replaceVariables: interpolate,
    theme,
    timeZone: 'utc',
  });
}

/**
 * The table panel (public/app/plugins/panel/table/TablePanel.tsx): the frame options.frameIndex
 * picks, in TableNG, with the frame picker below it when the answer holds several frames.
 */
function TablePanelBody({
  series,
  panel,
  fieldConfig,
  width,
  height,
}: {
  series: DataFrame[];
  panel: DashboardPanel;
  fieldConfig: FieldConfigSource;
  width: number;
  height: number;
}) {
  cacheFieldDisplayNames(series);
  const options = (panel.options ?? {}) as { frameIndex?: number; showHeader?: boolean; cellHeight?: TableCellHeight };
  const index =
    options.frameIndex && options.frameIndex > 0 && options.frameIndex < series.length ? options.frameIndex : 0;
  const multiple = series.length > 1;
  // theme.spacing.gridSize * theme.components.height.md, plus the picker's padding
  const tableHeight = multiple ? height - 8 * 4 - 8 : height;
  const table = (
    <TableNG
      data={series[index]}
      width={width}
      height={tableHeight}
      noHeader={options.showHeader === false}
      noValue={fieldConfig.defaults.noValue}
      resizable={true}
      cellHeight={options.cellHeight}
      fieldConfig={fieldConfig}
    />
  );
  if (!multiple) {
    return table;
  }
  const names = series.map((f, i) => ({ label: getFrameDisplayName(f), value: i }));
  return (
    <div style={{ display: 'flex', flexDirection: 'column', justifyContent: 'space-between', height: '100%' }}>
      {table}
      <div style={{ padding: '8px 8px 0px 8px' }}>
        <Combobox options={names} value={names[index]} onChange={() => {}} />
      </div>
    </div>
  );
}

interface StatOptions {
  reduceOptions: ReduceDataOptions;
  textMode?: BigValueTextMode;
  colorMode?: BigValueColorMode;
  graphMode?: BigValueGraphMode;
  justifyMode?: BigValueJustifyMode;
  orientation?: VizOrientation;
  wideLayout?: boolean;
  showPercentChange?: boolean;
  text?: { valueSize?: number; titleSize?: number };
}

/**
 * The stat panel (public/app/plugins/panel/stat/StatPanel.tsx): getFieldDisplayValues reduces the
 * fields reduceOptions picks, VizRepeater lays the values out and BigValue draws each.
 */
function StatPanelBody({
  series,
  panel,
  fieldConfig,
  theme,
  width,
  height,
}: {
  series: DataFrame[];
  panel: DashboardPanel;
  fieldConfig: FieldConfigSource;
  theme: GrafanaTheme2;
  width: number;
  height: number;
}) {
  // The stat panel's defaults (public/app/plugins/panel/stat/panelcfg.cue) under the panel's options.
  const options: StatOptions = {
    colorMode: BigValueColorMode.Value,
    graphMode: BigValueGraphMode.Area,
    justifyMode: BigValueJustifyMode.Auto,
    textMode: BigValueTextMode.Auto,
    wideLayout: true,
    ...(panel.options as unknown as StatOptions),
  };
  const getValues = (): FieldDisplay[] =>
    getFieldDisplayValues({
      fieldConfig,
      reduceOptions: options.reduceOptions,
      replaceVariables: (v: string) => v,
      theme,
      data: series,
      sparkline: options.graphMode !== BigValueGraphMode.None,
      percentChange: options.showPercentChange,
      timeZone: 'utc',
    });
  return (
    <VizRepeater<FieldDisplay, DisplayValueAlignmentFactors>
      getValues={getValues}
      getAlignmentFactors={getDisplayValueAlignmentFactors}
      renderValue={({ value, alignmentFactors, width, height, count }) => (
        <BigValue
          value={value.display}
          count={count}
          colorMode={options.colorMode!}
          graphMode={options.graphMode!}
          justifyMode={options.justifyMode}
          textMode={options.textMode}
          alignmentFactors={alignmentFactors}
          text={options.text}
          width={width}
          height={height}
          theme={theme}
          disableWideLayout={!options.wideLayout}
        />
      )}
      width={width}
      height={height}
      source={series}
      renderCounter={0}
      itemSpacing={3}
      autoGrid={true}
      orientation={options.orientation ?? VizOrientation.Auto}
    />
  );
}

/** The text panel (public/app/plugins/panel/text/TextPanel.tsx) in markdown mode. */
function TextPanelBody({ panel }: { panel: DashboardPanel }) {
  const content = String((panel.options as { content?: string } | undefined)?.content ?? '');
  // Grafana scrolls a text panel's content that does not fit (CustomScrollbar).
  return (
    <div style={{ height: '100%', overflow: 'auto' }}>
      <div className="markdown-html" dangerouslySetInnerHTML={{ __html: renderTextPanelMarkdown(content) }} />
    </div>
  );
}

/**
 * The panels at their grid positions in a grid gridWidth px wide, each fed the answer's frames
 * (the Dashboard data source hands a panel every frame of the panel it reuses).
 */
export function DashboardPanels({
  panels,
  series,
  gridWidth,
  theme,
  transformed,
}: {
  panels: DashboardPanel[];
  series: DataFrame[];
  gridWidth: number;
  theme: GrafanaTheme2;
  /** A panel's frames after its transformations, by panel id; the others get series. */
  transformed?: Record<number, DataFrame[]>;
}) {
  const top = Math.min(...panels.map((p) => p.gridPos.y));
  const bottom = Math.max(...panels.map((p) => p.gridPos.y + p.gridPos.h));
  return (
    <div
      style={{
        position: 'relative',
        width: gridWidth,
        height: box({ gridPos: { x: 0, y: top, w: 1, h: bottom - top } } as DashboardPanel, gridWidth, top).height,
      }}
    >
      {panels.map((p) => {
        const b = box(p, gridWidth, top);
        const saved = p.fieldConfig ?? { defaults: {}, overrides: [] };
        const fieldConfig = withPluginDefaults(p.type === 'table' ? migrateTablePanel(saved) : saved, p.type);
        const shown = p.type === 'text' ? [] : withFieldConfig(transformed?.[p.id] ?? series, p, fieldConfig, theme);
        return (
          <div key={p.id} data-panel-id={p.id} data-panel-type={p.type} style={{ position: 'absolute', ...b }}>
            <PanelChrome title={p.title} width={b.width} height={b.height}>
              {(innerWidth, innerHeight) => {
                switch (p.type) {
                  case 'table':
                    return (
                      <TablePanelBody
                        series={shown}
                        panel={p}
                        fieldConfig={fieldConfig}
                        width={innerWidth}
                        height={innerHeight}
                      />
                    );
                  case 'stat':
                    return (
                      <StatPanelBody
                        series={shown}
                        panel={p}
                        fieldConfig={fieldConfig}
                        theme={theme}
                        width={innerWidth}
                        height={innerHeight}
                      />
                    );
                  case 'text':
                    return <TextPanelBody panel={p} />;
                  default:
                    return <div data-testid="panel-message">this page does not draw {p.type} panels</div>;
                }
              }}
            </PanelChrome>
          </div>
        );
      })}
    </div>
  );
}
