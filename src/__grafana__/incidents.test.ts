import { DataFrame, FieldType, getFieldDisplayName } from '@grafana/data';

import { readFixture } from './fixtures';
import { toFrames } from './frames';
import { countBy, incidentsPanel } from './incidents';
import { applyTransformations } from './transform';

// The GPU incident dashboard's panels that reuse the Failures table's answer through Grafana's
// Dashboard data source: their own transformations, applied with @grafana/data's transformers to
// the triage's real answer. The bar chart panel is not on npm (nor drawn by the browser test):
// what it would draw is the frame checked here, its xField the class and its one number the count.
describe("the GPU incident dashboard's transformations on the triage's answer", () => {
  const failures = (name: 'triage' | 'triageDemo') => {
    const frames = toFrames(readFixture(name));
    expect(frames.map((f) => f.name)).toEqual(['failures']);
    return frames;
  };
  // organize renames a field by its display name (config.displayName), which panels show and
  // sortBy and the bar chart's xField match.
  const shownNames = (f: DataFrame) => f.fields.map((x) => getFieldDisplayName(x, f));
  const values = (f: DataFrame, name: string) => {
    const field = f.fields.find((x) => getFieldDisplayName(x, f) === name);
    if (!field) {
      throw new Error(`frame ${f.name} has no field ${name}: ${f.fields.map((x) => x.name).join(', ')}`);
    }
    return field.values as unknown[];
  };

  it('Failures by class: one bar per class of fixture-node-d, one failure each', async () => {
    const panel = incidentsPanel('Failures by class');
    const [out, ...rest] = await applyTransformations(panel.transformations!, failures('triage'));
    expect(rest).toEqual([]);
    expect(out.fields.map((f) => [getFieldDisplayName(f, out), f.type])).toEqual([
      ['class', FieldType.string],
      ['failures', FieldType.number],
    ]);
    // The six runbook classes the bed simulates on fixture-node-d, by their titles.
    expect([...values(out, 'class')].sort()).toEqual([
      'Container OOM kill (host memory, not the GPU)',
      'GPU memory envelope exceeded',
      'PCIe replays rising',
      'Row-remap failure',
      'Uncorrectable (double-bit) ECC errors',
      'XID error',
    ]);
    expect(values(out, 'failures')).toEqual([1, 1, 1, 1, 1, 1]);
    // The bar chart's options name the fields the transformations make.
    expect((panel.options as { xField: string }).xField).toBe('class');
  });

  it.each(['triage', 'triageDemo'] as const)(
    'Failures by class on %s: the rows counted per class, most first',
    async (name) => {
      const input = failures(name);
      const [out] = await applyTransformations(incidentsPanel('Failures by class').transformations!, input);
      const shown = Object.fromEntries(values(out, 'class').map((c, i) => [c, values(out, 'failures')[i]]));
      expect(shown).toEqual(countBy([values(input[0], 'class')]));
      const counts = values(out, 'failures') as number[];
      expect([...counts].sort((a, b) => b - a)).toEqual(counts);
    }
  );

  it.each(['triage', 'triageDemo'] as const)(
    'Affected pods and GPUs on %s: one row per host, GPU and pod',
    async (name) => {
      const input = failures(name);
      const [out, ...rest] = await applyTransformations(
        incidentsPanel('Affected pods and GPUs').transformations!,
        input
      );
      expect(rest).toEqual([]);
      expect(shownNames(out)).toEqual(['host', 'gpu', 'pod', 'failures', 'last failure', 'classes']);
      const f = input[0];
      const keys = ['host', 'gpu', 'pod'];
      const rows = out.length;
      const shown: Record<string, { failures: unknown; last: unknown; classes: unknown }> = {};
      for (let i = 0; i < rows; i++) {
        shown[keys.map((k) => String(values(out, k)[i])).join(' / ')] = {
          failures: values(out, 'failures')[i],
          last: values(out, 'last failure')[i],
          classes: [...(values(out, 'classes')[i] as string[])].sort(),
        };
      }
      const want: typeof shown = {};
      for (const [key, n] of Object.entries(countBy(keys.map((k) => values(f, k))))) {
        const at = [...Array(f.length).keys()].filter(
          (i) => keys.map((k) => String(values(f, k)[i])).join(' / ') === key
        );
        want[key] = {
          failures: n,
          last: Math.max(...at.map((i) => values(f, 'time')[i] as number)),
          classes: [...new Set(at.map((i) => values(f, 'class')[i]))].sort(),
        };
      }
      expect(shown).toEqual(want);
      if (name === 'triage') {
        // fixture-node-d: the memory errors of GPU 1 (ECC, row remap, PCIe replays) fall on one pod.
        expect(shown['fixture-node-d / 1 / llm-decode-1'].failures).toBe(3);
        expect(rows).toBe(4);
      }
      const counts = values(out, 'failures') as number[];
      expect([...counts].sort((a, b) => b - a)).toEqual(counts);
    }
  );
});
