import { DataFrameType, DataTopic, FieldType } from '@grafana/data';

import { readFixture } from './fixtures';
import { toFrames } from './frames';

// Grafana's heatmap panel is not published on npm; what it reads of an answer is @grafana/data's
// frames: a frame of type heatmap-cells in data.series (sparse when it has yMin and yMax, the
// dataplane contract) and, in data.annotations, the frame named "exemplar" (its prepareHeatmapData
// looks it up by that name among the annotation frames, which Grafana separates by dataTopic).
describe("the span heatmap, as Grafana's frontend decodes it", () => {
  const fixture = readFixture('spanHeatmap');
  const frames = toFrames(fixture);
  const [heat, exemplars] = frames;
  const field = (f: typeof heat, name: string) => {
    const found = f.fields.find((x) => x.name === name);
    if (!found) {
      throw new Error(`frame ${f.name} has no field ${name}`);
    }
    return found;
  };

  it('is a sparse heatmap-cells frame of durations in seconds', () => {
    expect(heat.meta?.type).toBe(DataFrameType.HeatmapCells);
    expect(heat.fields.map((f) => [f.name, f.type])).toEqual([
      ['xMax', FieldType.time],
      ['yMin', FieldType.number],
      ['yMax', FieldType.number],
      ['count', FieldType.number],
    ]);
    const yMin = field(heat, 'yMin').values;
    const yMax = field(heat, 'yMax').values;
    const xMax = field(heat, 'xMax').values;
    expect(field(heat, 'yMin').config.unit).toBe('s');
    for (let i = 0; i < heat.length; i++) {
      expect(yMin[i]).toBeLessThan(yMax[i]);
      if (i > 0) {
        expect(xMax[i]).toBeGreaterThanOrEqual(xMax[i - 1]);
      }
    }
    // Every span the notice says was read is in one cell.
    const counted = field(heat, 'count').values.reduce((a: number, b: number) => a + b, 0);
    const said = (heat.meta?.notices ?? []).map((n) => n.text).join('\n');
    const read = Number(/(\d+) span\(s\) of nemotron-backend db_query/.exec(said)?.[1]);
    expect(counted).toBe(read);
    expect(read).toBeGreaterThan(0);
  });

  it('has exemplars where the heatmap panel looks for them, the slow request among them', () => {
    expect(exemplars.name).toBe('exemplar');
    expect(exemplars.meta?.dataTopic).toBe(DataTopic.Annotations);
    expect(field(exemplars, 'Time').type).toBe(FieldType.time);
    const value = field(exemplars, 'Value');
    expect(value.config.unit).toBe('s');
    // The fixture's slow request spent 300 ms in db_query: the exemplar of its step (it, or another
    // slow request ending in the same step) is at least that slow.
    const traces = field(exemplars, 'traceID').values as string[];
    expect(traces.every((id) => /^[0-9a-f]{32}$/.test(id))).toBe(true);
    expect(Math.max(...(value.values as number[]))).toBeGreaterThanOrEqual(0.2);
  });
});
