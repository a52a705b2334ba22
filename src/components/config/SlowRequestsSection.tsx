import React, { useState } from 'react';
import { Button, InlineField, InlineFieldRow, TextArea } from '@grafana/ui';
import { DEFAULT_LATENCY_HISTOGRAMS, LatencyHistogram } from '../../types';
import { DEFAULT_LATENCY_MS } from '../../generated/vocabulary';
import { parseLatencyHistograms } from '../validation';
import { LABEL_WIDTH, SectionProps, Section, NumberSetting, Column } from './fields';

export const SLOW_KEYS = ['latencyYellowMs', 'latencyRedMs', 'latencyHistograms'] as const;

export function SlowRequestsSection({ jsonData, onChange, open }: SectionProps) {
  const yellow = jsonData.latencyYellowMs;
  const red = jsonData.latencyRedMs;
  const positive = (v?: number) => (v === undefined || Number(v) > 0 ? undefined : 'A positive number of milliseconds');
  const order =
    Number(yellow ?? DEFAULT_LATENCY_MS.yellow) >= Number(red ?? DEFAULT_LATENCY_MS.red)
      ? `Yellow must start below red (defaults ${DEFAULT_LATENCY_MS.yellow} and ${DEFAULT_LATENCY_MS.red})`
      : undefined;
  return (
    <Section
      title="Slow requests"
      summary="Latency colours, and the request-duration histograms percentiles are read from."
      open={open}
    >
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
