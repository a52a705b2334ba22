import React, { useId, useRef, useState } from 'react';
import { DataSourceInstanceSettings } from '@grafana/data';
import { DataSourcePicker } from '@grafana/runtime';
import {
  Box,
  Button,
  CollapsableSection,
  IconButton,
  InlineField,
  InlineFieldRow,
  InlineSwitch,
  Input,
  Stack,
  Text,
  TextArea,
} from '@grafana/ui';

import {
  COMPUTED_GPU_METRICS,
  DCGM_LABEL_ROLES,
  DEFAULT_LATENCY_HISTOGRAMS,
  GPU_METRIC_NAMES,
  GpuThresholds,
  HsiOptions,
  LatencyHistogram,
  TRACE_DATASOURCE_TYPES,
  TraceDatasourceType,
} from '../types';
import {
  DEFAULT_LATENCY_MS,
  GPU_MAX_SERIES,
  GPU_THRESHOLD_WINDOW_RANGE as WINDOWS,
  GPU_THRESHOLD_WINDOWS,
  GPU_THRESHOLDS,
  JOIN_DEFAULTS,
  PCIE_LINK,
  TRACE_FILE_DEFAULTS,
} from '../generated/vocabulary';
import {
  attributeError,
  dashboardUidError,
  labelNameError,
  metricNameError,
  parseLatencyHistograms,
  rangeError,
  stepError,
  windowError,
} from './validation';

const LABEL_WIDTH = 22;

/** A change to jsonData: keys set to undefined are removed, so the backend's default applies. */
export type JsonPatch = Partial<HsiOptions>;

interface Props {
  jsonData: HsiOptions;
  onChange: (patch: JsonPatch) => void;
}

/**
 * The settings beyond the upstreams, each section collapsed unless one of its keys is set. Every
 * field writes the jsonData key the backend reads (pkg/models/settings*.go) with its JSON type;
 * an empty field removes its key.
 */
export function SettingsSections({ jsonData, onChange }: Props) {
  const has = (...keys: Array<keyof HsiOptions>) => keys.some((k) => jsonData[k] !== undefined);
  return (
    <>
      <Section title="Profiles" open={has('minStep')}>
        <TextSetting
          label="Minimum step"
          tooltip="The finest resolution of profile values over time (Metrics and Both queries): a panel's interval below it is raised to it. As in Grafana's Pyroscope data source. Default 15s."
          placeholder="15s"
          value={jsonData.minStep}
          error={stepError(jsonData.minStep)}
          onChange={(v) => onChange({ minStep: v })}
        />
      </Section>
      <DcgmSection jsonData={jsonData} onChange={onChange} open={has(...DCGM_KEYS)} />
      <Section title="Local GPUs (NVML)" open={has('nvmlEnabled')}>
        <InlineField
          label="Read local GPUs"
          labelWidth={LABEL_WIDTH}
          tooltip={NVML_TOOLTIP}
          invalid={Boolean(nvmlError(jsonData.nvmlEnabled))}
          error={nvmlError(jsonData.nvmlEnabled)}
        >
          <InlineSwitch
            aria-label="Read local GPUs"
            value={jsonData.nvmlEnabled === true}
            onChange={(e) => onChange({ nvmlEnabled: e.currentTarget.checked ? true : undefined })}
          />
        </InlineField>
      </Section>
      <TraceDirectoriesSection
        jsonData={jsonData}
        onChange={onChange}
        open={has('traceDirectories', 'traceMaxFileBytes', 'traceMaxFiles')}
      />
      <ThresholdsSection jsonData={jsonData} onChange={onChange} open={has('gpuThresholds')} />
      <JoinSection jsonData={jsonData} onChange={onChange} open={has(...JOIN_KEYS)} />
      <SlowRequestsSection jsonData={jsonData} onChange={onChange} open={has(...SLOW_KEYS)} />
    </>
  );
}

/** One absolute directory a line; only absolute paths are kept by the backend. */
function traceDirsError(dirs?: string[]): string | undefined {
  const bad = (dirs ?? []).find((d) => !d.startsWith('/') && !/^[A-Za-z]:[\\/]/.test(d));
  return bad === undefined ? undefined : `Not an absolute path: ${bad}`;
}

/** GPU kernel traces: where the kernels query reads PyTorch profiler traces and Nsight Systems exports. */
function TraceDirectoriesSection({ jsonData, onChange, open }: SectionProps) {
  const dirs = jsonData.traceDirectories;
  return (
    <Section title="GPU kernel traces" open={open}>
      <InlineField
        label="Trace directories"
        labelWidth={LABEL_WIDTH}
        tooltip="Absolute directories, one a line, holding PyTorch profiler traces (*.json, *.json.gz, *.pt.trace.json) and Nsight Systems SQLite exports (*.sqlite), such as PYTORCH_PROFILE_DIR. Read only; paths never leave these directories. Empty: the GPU kernels query is off."
        invalid={Boolean(traceDirsError(dirs))}
        error={traceDirsError(dirs)}
      >
        <TextArea
          aria-label="Trace directories"
          cols={60}
          rows={3}
          placeholder="/var/lib/profiles"
          value={(dirs ?? []).join('\n')}
          onChange={(e) => {
            const list = e.currentTarget.value
              .split('\n')
              .map((d) => d.trim())
              .filter((d) => d !== '');
            onChange({ traceDirectories: list.length ? list : undefined });
          }}
        />
      </InlineField>
      <InlineFieldRow>
        <NumberSetting
          label="Max file bytes"
          tooltip={`Trace files larger than this are skipped. Default ${TRACE_FILE_DEFAULTS.maxFileBytes} (${TRACE_FILE_DEFAULTS.maxFileBytes / 2 ** 30} GiB).`}
          placeholder={String(TRACE_FILE_DEFAULTS.maxFileBytes)}
          value={jsonData.traceMaxFileBytes}
          range={{ min: 0, max: Number.MAX_SAFE_INTEGER, minOpen: true, whole: true }}
          onChange={(v) => onChange({ traceMaxFileBytes: v })}
        />
        <NumberSetting
          label="Max files"
          labelWidth={16}
          tooltip={`Trace files looked at per query. Default ${TRACE_FILE_DEFAULTS.maxFiles}.`}
          placeholder={String(TRACE_FILE_DEFAULTS.maxFiles)}
          value={jsonData.traceMaxFiles}
          range={{ min: 0, max: 10000000, minOpen: true, whole: true }}
          onChange={(v) => onChange({ traceMaxFiles: v })}
        />
      </InlineFieldRow>
    </Section>
  );
}

const NVML_TOOLTIP =
  'The Local GPUs (NVML) query type: reads the GPUs of the host Grafana runs on through the NVIDIA driver’s NVML. ' +
  'Needs the linux build of the plugin and the NVIDIA driver on that host (in a container, the NVIDIA container toolkit). Off by default.';

/** The backend reads nvmlEnabled as a JSON boolean only; a provisioning file may hold "true". */
const nvmlError = (v: unknown) =>
  v === undefined || typeof v === 'boolean'
    ? undefined
    : 'Not true or false: Local GPUs queries fail until the switch stores a boolean';

const DCGM_KEYS = ['gpuMaxSeries', 'dcgmMetricNames', 'dcgmLabelNames', 'pcieGeneration', 'pcieWidth'] as const;
const JOIN_KEYS = [
  'joinHostAttribute',
  'joinGpuAttribute',
  'joinHostMap',
  'traceDatasourceUid',
  'gpuDashboardUid',
  'requestDashboardUid',
] as const;
const SLOW_KEYS = ['latencyYellowMs', 'latencyRedMs', 'latencyHistograms'] as const;

interface SectionProps extends Props {
  open: boolean;
}

function DcgmSection({ jsonData, onChange, open }: SectionProps) {
  const labels = asRecord(jsonData.dcgmLabelNames);
  return (
    <Section title="GPU series (DCGM)" open={open}>
      <NumberSetting
        label="Series limit"
        tooltip={`Most series one GPU query returns (${GPU_MAX_SERIES.min} to ${GPU_MAX_SERIES.max}); beyond it the panel shows the first ones and a notice. Default ${GPU_MAX_SERIES.default}.`}
        placeholder={String(GPU_MAX_SERIES.default)}
        value={jsonData.gpuMaxSeries}
        range={{ min: GPU_MAX_SERIES.min, max: GPU_MAX_SERIES.max, whole: true }}
        onChange={(v) => onChange({ gpuMaxSeries: v })}
      />
      <InlineFieldRow>
        <NumberSetting
          label="PCIe generation"
          tooltip={`The PCIe generation of the GPUs' host link, ${PCIE_LINK.minGeneration} to ${PCIE_LINK.maxGeneration}. With the width it gives the link's capacity, which the PCIe-bound classification compares transfers with. Default ${PCIE_LINK.defaultGeneration}.`}
          placeholder={String(PCIE_LINK.defaultGeneration)}
          value={jsonData.pcieGeneration}
          range={{ min: PCIE_LINK.minGeneration, max: PCIE_LINK.maxGeneration, whole: true }}
          onChange={(v) => onChange({ pcieGeneration: v })}
        />
        <NumberSetting
          label="Lanes"
          labelWidth={8}
          tooltip={`The PCIe link width: ${PCIE_WIDTHS.slice(0, -1).join(', ')} or ${PCIE_WIDTHS.at(-1)} lanes. Default ${PCIE_LINK.defaultWidth}.`}
          placeholder={String(PCIE_LINK.defaultWidth)}
          value={jsonData.pcieWidth}
          error={pcieWidthError(jsonData.pcieWidth)}
          onChange={(v) => onChange({ pcieWidth: v })}
        />
      </InlineFieldRow>
      <KeyValueList
        label="Metric names"
        tooltip="Read a GPU metric from another Prometheus metric than the DCGM exporter's usual names, e.g. gpu_utilization from a recording rule. The metric must be in the same unit. Without an entry the plugin tries the known DCGM names."
        name="metric"
        keyPlaceholder="gpu_utilization"
        valuePlaceholder="DCGM_FI_DEV_GPU_UTIL"
        keyOptions={GPU_METRIC_NAMES}
        keyError={metricKeyError}
        valueError={metricNameError}
        addLabel="Add metric"
        value={jsonData.dcgmMetricNames}
        onChange={(v) => onChange({ dcgmMetricNames: v })}
      />
      <InlineFieldRow>
        {DCGM_LABEL_ROLES.map((r) => (
          <TextSetting
            key={r.role}
            label={`${r.label} label`}
            width={20}
            tooltip={`The label of the DCGM series that carries the ${r.what}. Leave empty to detect it: the plugin looks for ${r.aliases.join(', ')}.`}
            placeholder="auto"
            value={labels[r.role]}
            error={labelNameError(labels[r.role])}
            onChange={(v) => {
              const next = { ...labels, [r.role]: v };
              if (v === undefined) {
                delete next[r.role];
              }
              onChange({ dcgmLabelNames: Object.keys(next).length ? next : undefined });
            }}
          />
        ))}
      </InlineFieldRow>
    </Section>
  );
}

const PCIE_WIDTHS: readonly number[] = PCIE_LINK.widths;

const pcieWidthError = (v: number | undefined) =>
  v === undefined || PCIE_WIDTHS.includes(Number(v)) ? undefined : `One of ${PCIE_WIDTHS.join(', ')}`;

function metricKeyError(key: string): string | undefined {
  if (COMPUTED_GPU_METRICS[key]) {
    return `${key} is computed from ${COMPUTED_GPU_METRICS[key]}: rename those instead`;
  }
  return (GPU_METRIC_NAMES as readonly string[]).includes(key) ? undefined : 'Not a GPU metric of the catalogue';
}

interface ThresholdDef {
  key: keyof GpuThresholds;
  label: string;
  tooltip: string;
  default: number | string;
  /** Numbers: their valid range; windows have none (windowError). */
  range?: { min: number; max: number; minOpen?: boolean };
}

type NumericThreshold = keyof typeof GPU_THRESHOLDS;
type WindowThreshold = keyof typeof GPU_THRESHOLD_WINDOWS;

/** A numeric threshold's default and range, from the backend's (src/generated/vocabulary.ts). */
const numeric = (key: NumericThreshold) => {
  const { default: value, min, max, minOpen } = GPU_THRESHOLDS[key];
  return { key, default: value, range: { min, max, minOpen } };
};
const window = (key: WindowThreshold) => ({ key, default: GPU_THRESHOLD_WINDOWS[key].default });
const dflt = (key: NumericThreshold | WindowThreshold) =>
  key in GPU_THRESHOLDS
    ? GPU_THRESHOLDS[key as NumericThreshold].default
    : GPU_THRESHOLD_WINDOWS[key as WindowThreshold].default;

/** gpuThresholds keys in pairs, one row each; defaults and ranges are the backend's. */
export const THRESHOLD_ROWS: ThresholdDef[][] = [
  [
    {
      ...numeric('computeBoundPct'),
      label: 'Compute-bound above %',
      tooltip: `A GPU is compute-bound when its compute (SM active, else GPU utilisation) is above this percentage and its memory bandwidth below the next one. Default ${dflt('computeBoundPct')}.`,
    },
    {
      ...numeric('computeBoundMaxMemoryPct'),
      label: 'and memory below %',
      tooltip: `Memory bandwidth a compute-bound GPU stays under, in percent. Default ${dflt('computeBoundMaxMemoryPct')}.`,
    },
  ],
  [
    {
      ...numeric('memoryBoundPct'),
      label: 'Memory-bound above %',
      tooltip: `A GPU is memory-bound when its memory bandwidth is above this percentage and its compute below the next one. Default ${dflt('memoryBoundPct')}.`,
    },
    {
      ...numeric('memoryBoundMaxComputePct'),
      label: 'and compute below %',
      tooltip: `Compute a memory-bound GPU stays under, in percent. Default ${dflt('memoryBoundMaxComputePct')}.`,
    },
  ],
  [
    {
      ...numeric('thermalTempC'),
      label: 'Thermal above °C',
      tooltip: `When the exporter does not report why clocks were lowered: a GPU hotter than this whose SM clock is under the ratio next to it of its recent maximum is thermal-throttled. Default ${dflt('thermalTempC')}.`,
    },
    {
      ...numeric('thermalClockRatio'),
      label: 'and clock below ×max',
      tooltip: `The SM clock as a share of its maximum over the max-clock window (0 to 1). Default ${dflt('thermalClockRatio')}.`,
    },
  ],
  [
    {
      ...numeric('pcieBoundLinkShare'),
      label: 'PCIe-bound above ×link',
      tooltip: `A GPU is PCIe-bound when the busier transfer direction is above this share of the link's capacity (generation × lanes, in GPU series) while compute and memory are not high. 0 to 1; default ${dflt('pcieBoundLinkShare')}.`,
    },
    {
      ...numeric('idleBelowPct'),
      label: 'Idle below %',
      tooltip: `Compute below this percentage is low utilisation. Default ${dflt('idleBelowPct')}.`,
    },
  ],
  [
    {
      ...numeric('dramActivePeak'),
      label: 'DRAM active peak',
      tooltip: `DCGM's DRAM-active figure tops out near 0.8 in practice; it is divided by this to read as memory bandwidth in percent. 0 to 1; default ${dflt('dramActivePeak')}.`,
    },
  ],
  [
    {
      ...window('clockMaxWindow'),
      label: 'Max-clock window',
      tooltip: `How far back the SM clock's maximum (the clock the thermal check expects) is taken: ${WINDOWS.minText} to ${WINDOWS.maxText}. Throttling longer than this stops being seen. Default ${dflt('clockMaxWindow')}.`,
    },
    {
      ...window('shareWindow'),
      label: 'Share window',
      tooltip: `The window of the share of time each GPU spends in each class, as alerts compare it: ${WINDOWS.minText} to ${WINDOWS.maxText}. Default ${dflt('shareWindow')}.`,
    },
  ],
];

function ThresholdsSection({ jsonData, onChange, open }: SectionProps) {
  const th = asRecord(jsonData.gpuThresholds);
  const set = (key: keyof GpuThresholds, v: number | string | undefined) => {
    const next: GpuThresholds = { ...th, [key]: v };
    if (v === undefined) {
      delete next[key];
    }
    onChange({ gpuThresholds: Object.keys(next).length ? next : undefined });
  };
  return (
    <Section
      title="GPU classification thresholds"
      open={open}
      description="When a GPU counts as compute-, memory- or PCIe-bound, throttled or idle. Empty fields keep the defaults; the provisioned Prometheus recording rules use the defaults, so re-render them after a change."
    >
      {THRESHOLD_ROWS.map((row) => (
        <InlineFieldRow key={row[0].key}>
          {row.map((d, i) => {
            const common = {
              label: d.label,
              tooltip: d.tooltip,
              placeholder: String(d.default),
              labelWidth: i === 0 ? LABEL_WIDTH : 20,
            };
            return d.range ? (
              <NumberSetting
                key={d.key}
                {...common}
                value={th[d.key] as number | undefined}
                range={d.range}
                onChange={(v) => set(d.key, v)}
              />
            ) : (
              <TextSetting
                key={d.key}
                {...common}
                width={12}
                value={th[d.key] as string | undefined}
                error={windowError(th[d.key] as string | undefined)}
                onChange={(v) => set(d.key, v)}
              />
            );
          })}
        </InlineFieldRow>
      ))}
    </Section>
  );
}

function JoinSection({ jsonData, onChange, open }: SectionProps) {
  const pickerId = useId();
  return (
    <Section title="Request join and links" open={open}>
      <TextSetting
        label="Span host attribute"
        tooltip={`The span resource attribute that names the host a request ran on, to find its GPUs. A span attribute of that name is used when the resource lacks it. Default ${JOIN_DEFAULTS.hostAttribute}.`}
        placeholder={JOIN_DEFAULTS.hostAttribute}
        value={jsonData.joinHostAttribute}
        error={attributeError(jsonData.joinHostAttribute)}
        onChange={(v) => onChange({ joinHostAttribute: v })}
      />
      <TextSetting
        label="Span GPU attribute"
        tooltip={`The span attribute that names the GPUs a service used, by index or UUID (several separated by commas). Spans of services without it are joined to every GPU of their host. Default ${JOIN_DEFAULTS.gpuAttribute}.`}
        placeholder={JOIN_DEFAULTS.gpuAttribute}
        value={jsonData.joinGpuAttribute}
        error={attributeError(jsonData.joinGpuAttribute)}
        onChange={(v) => onChange({ joinGpuAttribute: v })}
      />
      <KeyValueList
        label="Host names"
        tooltip="When traces and DCGM name a host differently: the span's host (left) and the DCGM host label value (right). Hosts not listed are looked up by the same name."
        name="host"
        keyPlaceholder="span host"
        valuePlaceholder="DCGM host"
        addLabel="Add host"
        value={jsonData.joinHostMap}
        onChange={(v) => onChange({ joinHostMap: v })}
      />
      <InlineField
        label="Trace data source"
        labelWidth={LABEL_WIDTH}
        htmlFor={pickerId}
        tooltip="The Jaeger or Tempo data source that span links open in Explore. None: spans carry no trace link."
      >
        <DataSourcePicker
          inputId={pickerId}
          width={40}
          type={TRACE_DATASOURCE_TYPES}
          noDefault
          placeholder="None"
          current={jsonData.traceDatasourceUid ?? null}
          onChange={(ds: DataSourceInstanceSettings) =>
            onChange({
              traceDatasourceUid: ds.uid,
              traceDatasourceType: (TRACE_DATASOURCE_TYPES as string[]).includes(ds.type)
                ? (ds.type as TraceDatasourceType)
                : undefined,
            })
          }
          onClear={() => onChange({ traceDatasourceUid: undefined, traceDatasourceType: undefined })}
        />
      </InlineField>
      <TextSetting
        label="GPU dashboard UID"
        tooltip={`The dashboard that GPU links open. Default ${JOIN_DEFAULTS.gpuDashboardUid}, the GPU Metrics dashboard this plugin ships.`}
        placeholder={JOIN_DEFAULTS.gpuDashboardUid}
        value={jsonData.gpuDashboardUid}
        error={dashboardUidError(jsonData.gpuDashboardUid)}
        onChange={(v) => onChange({ gpuDashboardUid: v })}
      />
      <TextSetting
        label="Request dashboard UID"
        tooltip={`The dashboard that slow-trace links open, with the trace ID filled in. Default ${JOIN_DEFAULTS.requestDashboardUid}, the Request-Level Profiling dashboard this plugin ships.`}
        placeholder={JOIN_DEFAULTS.requestDashboardUid}
        value={jsonData.requestDashboardUid}
        error={dashboardUidError(jsonData.requestDashboardUid)}
        onChange={(v) => onChange({ requestDashboardUid: v })}
      />
    </Section>
  );
}

function SlowRequestsSection({ jsonData, onChange, open }: SectionProps) {
  const yellow = jsonData.latencyYellowMs;
  const red = jsonData.latencyRedMs;
  const positive = (v?: number) => (v === undefined || Number(v) > 0 ? undefined : 'A positive number of milliseconds');
  const order =
    Number(yellow ?? DEFAULT_LATENCY_MS.yellow) >= Number(red ?? DEFAULT_LATENCY_MS.red)
      ? `Yellow must start below red (defaults ${DEFAULT_LATENCY_MS.yellow} and ${DEFAULT_LATENCY_MS.red})`
      : undefined;
  return (
    <Section title="Slow requests" open={open}>
      <InlineFieldRow>
        <NumberSetting
          label="Yellow from (ms)"
          tooltip={`Latencies from this many milliseconds are coloured yellow, faster ones green. Default ${DEFAULT_LATENCY_MS.yellow}.`}
          placeholder={String(DEFAULT_LATENCY_MS.yellow)}
          value={yellow}
          error={positive(yellow)}
          onChange={(v) => onChange({ latencyYellowMs: v })}
        />
        <NumberSetting
          label="Red from (ms)"
          labelWidth={16}
          tooltip={`Latencies from this many milliseconds are coloured red. Default ${DEFAULT_LATENCY_MS.red}.`}
          placeholder={String(DEFAULT_LATENCY_MS.red)}
          value={red}
          error={positive(red) ?? order}
          onChange={(v) => onChange({ latencyRedMs: v })}
        />
      </InlineFieldRow>
      <LatencyHistogramsField value={jsonData.latencyHistograms} onChange={(v) => onChange({ latencyHistograms: v })} />
    </Section>
  );
}

const HISTOGRAMS_TOOLTIP =
  'The Prometheus request-duration histograms (in seconds) that latency percentiles are read from, as a JSON list: ' +
  'metric is the histogram without _bucket, serviceLabels the labels naming the service (the first one a series has wins), ' +
  'endpointLabel the label naming the endpoint. Empty: the demo’s http_request_duration_seconds (service, endpoint) and ' +
  'OpenTelemetry’s http_server_request_duration_seconds (service_name, else job; http_route).';

const formatHistograms = (v?: LatencyHistogram[]) => (v === undefined ? '' : JSON.stringify(v, null, 2));

/** A JSON text area; only a valid list is written, so a typo keeps the last valid one in force. */
function LatencyHistogramsField({
  value,
  onChange,
}: {
  value?: LatencyHistogram[];
  onChange: (v: LatencyHistogram[] | undefined) => void;
}) {
  const [draft, setDraft] = useState(() => formatHistograms(value));
  // The value this field last wrote or was given; anything else comes from outside and replaces the draft.
  const [seen, setSeen] = useState(() => JSON.stringify(value ?? null));
  if (JSON.stringify(value ?? null) !== seen) {
    setSeen(JSON.stringify(value ?? null));
    setDraft(formatHistograms(value));
  }
  const parsed = draft.trim() === '' ? undefined : parseLatencyHistograms(draft);
  const error = parsed && 'error' in parsed ? parsed.error : undefined;

  const edit = (text: string) => {
    setDraft(text);
    const p = text.trim() === '' ? { value: undefined } : parseLatencyHistograms(text);
    if ('value' in p) {
      setSeen(JSON.stringify(p.value ?? null));
      onChange(p.value);
    }
  };

  return (
    <InlineField
      label="Latency histograms"
      labelWidth={LABEL_WIDTH}
      tooltip={HISTOGRAMS_TOOLTIP}
      invalid={Boolean(error)}
      error={error && `${error}. The last valid list stays in use.`}
    >
      <Column>
        <TextArea
          aria-label="Latency histograms"
          cols={70}
          rows={draft === '' ? 3 : Math.min(14, draft.split('\n').length + 1)}
          placeholder={`Defaults: ${JSON.stringify(DEFAULT_LATENCY_HISTOGRAMS)}`}
          value={draft}
          invalid={Boolean(error)}
          onChange={(e) => edit(e.currentTarget.value)}
        />
        {draft === '' && (
          <Button
            size="sm"
            variant="secondary"
            fill="text"
            icon="edit"
            onClick={() => edit(formatHistograms(DEFAULT_LATENCY_HISTOGRAMS))}
          >
            Edit the defaults
          </Button>
        )}
      </Column>
    </InlineField>
  );
}

function Section({
  title,
  open,
  description,
  children,
}: {
  title: string;
  open: boolean;
  description?: string;
  children: React.ReactNode;
}) {
  return (
    <CollapsableSection label={title} isOpen={open}>
      {description && (
        <Box marginBottom={1} maxWidth={100}>
          <Text color="secondary" variant="bodySmall">
            {description}
          </Text>
        </Box>
      )}
      {children}
    </CollapsableSection>
  );
}

interface TextSettingProps {
  label: string;
  tooltip: string;
  placeholder: string;
  value?: string;
  error?: string;
  width?: number;
  labelWidth?: number;
  /** Undefined when the field is emptied: the key leaves jsonData. */
  onChange: (v: string | undefined) => void;
}

function TextSetting({ label, tooltip, placeholder, value, error, width, labelWidth, onChange }: TextSettingProps) {
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      tooltip={tooltip}
      invalid={Boolean(error)}
      error={error}
    >
      <Input
        aria-label={label}
        width={width ?? 30}
        placeholder={placeholder}
        value={value ?? ''}
        onChange={(e) => {
          const v = e.currentTarget.value;
          onChange(v.trim() === '' ? undefined : v);
        }}
      />
    </InlineField>
  );
}

interface NumberSettingProps {
  label: string;
  tooltip: string;
  placeholder: string;
  /** Provisioning files may quote numbers: "30" shows as 30. */
  value?: number | string;
  range?: { min: number; max: number; minOpen?: boolean; whole?: boolean };
  /** Shown instead of the range's message. */
  error?: string;
  labelWidth?: number;
  /** A number, or undefined when the field is emptied. */
  onChange: (v: number | undefined) => void;
}

function NumberSetting({ label, tooltip, placeholder, value, range, error, labelWidth, onChange }: NumberSettingProps) {
  const shown = value === undefined || value === '' ? undefined : Number(value);
  const message = (range && rangeError(shown, range)) || error;
  return (
    <InlineField
      label={label}
      labelWidth={labelWidth ?? LABEL_WIDTH}
      tooltip={tooltip}
      invalid={Boolean(message)}
      error={message}
    >
      <Input
        aria-label={label}
        type="number"
        width={12}
        placeholder={placeholder}
        value={shown === undefined || Number.isNaN(shown) ? String(value ?? '') : shown}
        onChange={(e) => {
          const v = e.currentTarget.value;
          onChange(v.trim() === '' ? undefined : Number(v));
        }}
      />
    </InlineField>
  );
}

interface KeyValueListProps {
  label: string;
  tooltip: string;
  /** Names the rows for screen readers and tests: "metric 1 from", "metric 1 to", "Remove metric 1". */
  name: string;
  keyPlaceholder: string;
  valuePlaceholder: string;
  addLabel: string;
  /** Suggestions for the key (a datalist: other values can still be typed). */
  keyOptions?: readonly string[];
  keyError?: (key: string) => string | undefined;
  valueError?: (value: string) => string | undefined;
  value?: Record<string, string>;
  /** The rows with both sides filled in, or undefined when none is: the key leaves jsonData. */
  onChange: (v: Record<string, string> | undefined) => void;
}

interface Row {
  /** React key: the stored key for rows read from jsonData, a counter for added ones. */
  id: string;
  key: string;
  value: string;
}

/** An object from jsonData, or {} for anything else a provisioning file may hold there. */
function asRecord<T extends object>(v: T | undefined): Partial<T> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

const toRows = (v?: Record<string, string>): Row[] =>
  Object.entries(asRecord(v)).map(([key, value]) => ({ id: `stored ${key}`, key, value: String(value) }));

const toObject = (rows: Row[]) => {
  const out: Record<string, string> = {};
  for (const r of rows) {
    if (r.key.trim() !== '' && r.value.trim() !== '') {
      out[r.key.trim()] = r.value.trim();
    }
  }
  return out;
};

const sameObject = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
};

/** An editable list of key → value rows with add and remove buttons; half-filled rows are kept but not written. */
function KeyValueList(p: KeyValueListProps) {
  const added = useRef(0);
  const [rows, setRows] = useState<Row[]>(() => toRows(p.value));
  const listId = useId();
  // What the rows would write for the stored value (trimmed, no empty sides), to compare with.
  const stored = toObject(toRows(p.value));

  // A value changed from outside (not by these rows) replaces them.
  if (!sameObject(toObject(rows), stored)) {
    setRows(toRows(p.value));
  }

  const update = (next: Row[]) => {
    setRows(next);
    const obj = toObject(next);
    if (!sameObject(obj, stored)) {
      p.onChange(Object.keys(obj).length ? obj : undefined);
    }
  };
  const duplicates = new Set(rows.map((r) => r.key.trim()).filter((k, i, all) => k !== '' && all.indexOf(k) !== i));

  return (
    <InlineField label={p.label} labelWidth={LABEL_WIDTH} tooltip={p.tooltip} useFieldset>
      <Column>
        {p.keyOptions && (
          <datalist id={listId}>
            {p.keyOptions.map((o) => (
              <option key={o} value={o} />
            ))}
          </datalist>
        )}
        {rows.map((r, i) => {
          const k = r.key.trim();
          const keyError =
            k === '' ? undefined : duplicates.has(k) ? 'Listed twice: the last one wins' : p.keyError?.(k);
          const valueError = p.valueError?.(r.value);
          const n = `${p.name} ${i + 1}`;
          return (
            <InlineFieldRow key={r.id}>
              <InlineField invalid={Boolean(keyError)} error={keyError}>
                <Input
                  aria-label={`${n} from`}
                  width={26}
                  list={p.keyOptions ? listId : undefined}
                  placeholder={p.keyPlaceholder}
                  value={r.key}
                  onChange={(e) => {
                    const key = e.currentTarget.value;
                    update(rows.map((x) => (x.id === r.id ? { ...x, key } : x)));
                  }}
                />
              </InlineField>
              <InlineField label="→" transparent invalid={Boolean(valueError)} error={valueError}>
                <Input
                  aria-label={`${n} to`}
                  width={30}
                  placeholder={p.valuePlaceholder}
                  value={r.value}
                  onChange={(e) => {
                    const value = e.currentTarget.value;
                    update(rows.map((x) => (x.id === r.id ? { ...x, value } : x)));
                  }}
                />
              </InlineField>
              <IconButton
                name="trash-alt"
                aria-label={`Remove ${n}`}
                onClick={() => update(rows.filter((x) => x.id !== r.id))}
              />
            </InlineFieldRow>
          );
        })}
        <div>
          <Button
            size="sm"
            variant="secondary"
            icon="plus"
            onClick={() => setRows([...rows, { id: `added ${added.current++}`, key: '', value: '' }])}
          >
            {p.addLabel}
          </Button>
        </div>
      </Column>
    </InlineField>
  );
}

/** InlineField passes invalid, disabled and aria props to its child; a column of several has no use for them. */
function Column({ children }: { children: React.ReactNode }) {
  return (
    <Stack direction="column" gap={0.5} alignItems="flex-start">
      {children}
    </Stack>
  );
}
