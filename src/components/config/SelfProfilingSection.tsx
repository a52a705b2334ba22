import React from 'react';
import { InlineField, Input } from '@grafana/ui';
import { urlError } from '../validation';
import { LABEL_WIDTH, SectionProps, Section } from './fields';

/** The plugin's own CPU and memory profiles, pushed to a Pyroscope; off unless a URL is set. */
export function SelfProfilingSection({ jsonData, onChange, open }: SectionProps) {
  const error = urlError(jsonData.selfProfilingUrl);
  return (
    <Section
      title="Self-profiling"
      summary="Push this plugin's own CPU and memory profiles to a Pyroscope. Off by default."
      open={open}
    >
      <InlineField
        label="Push profiles to"
        labelWidth={LABEL_WIDTH}
        grow
        htmlFor="selfProfilingUrl"
        tooltip="The Pyroscope this plugin pushes its own CPU and memory profiles to; samples carry the query type. Empty: off."
        invalid={Boolean(error)}
        error={error}
      >
        <Input
          id="selfProfilingUrl"
          aria-label="Self-profiling Pyroscope URL"
          width={50}
          placeholder="off"
          value={jsonData.selfProfilingUrl ?? ''}
          onChange={(e) => {
            const v = e.currentTarget.value;
            onChange({ selfProfilingUrl: v.trim() === '' ? undefined : v });
          }}
        />
      </InlineField>
    </Section>
  );
}
