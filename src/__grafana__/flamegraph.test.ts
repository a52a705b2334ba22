import { createTheme, DataFrame } from '@grafana/data';

// @grafana/flamegraph 13.0.1, the flame graph of Grafana's panel and Explore. Its package exports
// only the component; the model it renders from is imported from its files (jest.grafana.config.js).
import {
  checkFields,
  FlameGraphDataContainer,
  LevelItem,
} from '../../node_modules/@grafana/flamegraph/dist/types/FlameGraph/dataTransform';
import {
  getDiffTooltipData,
  getTooltipData,
} from '../../node_modules/@grafana/flamegraph/dist/types/FlameGraph/FlameGraphTooltip';
import { buildFilteredTable } from '../../node_modules/@grafana/flamegraph/dist/types/TopTable/FlameGraphTopTableContainer';

import { AnswerName } from './answers';
import { readFixture } from './fixtures';
import { toFrames } from './frames';

const theme = createTheme({ colors: { mode: 'dark' } });

function readAnswer(name: AnswerName) {
  const fixture = readFixture(name);
  return { fixture, frames: toFrames(fixture) };
}

/** Grafana's flame graph reads the first frame: the panel passes data.series[0]. */
function model(name: AnswerName, frame = 0) {
  const answer = readAnswer(name);
  const data = answer.frames[frame];
  // What the panel checks before it renders; a wrong frame shows this message instead.
  expect(checkFields(data)).toBeUndefined();
  // The container is what the component builds first: it throws "Malformed dataFrame" and the like.
  const container = new FlameGraphDataContainer(data, { collapsing: true }, theme);
  return { answer, data, container, levels: container.getLevels() };
}

function field(frame: DataFrame, name: string) {
  const f = frame.fields.find((x) => x.name === name);
  if (!f) {
    throw new Error(`frame ${frame.name} has no field ${name}: ${frame.fields.map((x) => x.name)}`);
  }
  return f;
}

function notices(frame: DataFrame): string {
  return (frame.meta?.notices ?? []).map((n) => n.text).join('\n');
}

/** The width Grafana gives a node, as a share of the root: what "% of total" in its tooltip says. */
function childrenTotal(item: LevelItem): number {
  return item.children.reduce((sum, c) => sum + c.value, 0);
}

describe("Grafana's flame graph reads the plugin's answers", () => {
  describe.each<AnswerName>(['service', 'span', 'request', 'spanProfile'])('the %s profile', (name) => {
    it('has the total the plugin computed, in nanoseconds of CPU', () => {
      const { data, container, levels } = model(name);
      const root = levels[0][0];
      expect(levels[0]).toHaveLength(1);
      expect(container.isDiffFlamegraph()).toBe(false);
      expect(container.getLabel(root.itemIndexes[0])).toBe('total');
      // The plugin's total: its root row. Grafana adds no other side to it.
      expect(root.value).toBe(field(data, 'value').values[0]);
      expect(root.value).toBeGreaterThan(0);
      // A parent is as wide as its children plus its own samples, all the way down.
      for (const level of levels) {
        for (const item of level) {
          expect(childrenTotal(item) + container.getSelf(item.itemIndexes)).toBe(item.value);
        }
      }
      const tooltip = getTooltipData(container, root, root.value);
      expect(tooltip).toMatchObject({ percentValue: 100, unitTitle: 'Time' });
      expect(tooltip.unitValue).toMatch(/^[\d.]+ (ns|µs|ms|s|mins?|hours?|days?)$/);
    });
  });

  it('shows the request as total → each service of its trace → its stacks, and a frame per service', () => {
    const { answer, data, container, levels } = model('request');
    const services = levels[1].map((item) => container.getLabel(item.itemIndexes[0])).sort();
    expect(services).toEqual(answer.fixture.profiledServices);
    expect(notices(data)).toContain('matched by span ID');
    // perService: the merged graph, then one frame per service, whose total is that service's node.
    expect(answer.frames.map((f) => f.name)).toEqual(['response', ...services]);
    for (const service of services) {
      const index = answer.frames.findIndex((f) => f.name === service);
      const own = model('request', index);
      const node = levels[1].find((item) => container.getLabel(item.itemIndexes[0]) === service)!;
      expect(own.levels[0][0].value).toBe(node.value);
    }
  });

  it("merges the slow requests' span profiles and says how many, with their samples", () => {
    const { data, container, levels } = model('spanProfile');
    const said = notices(data);
    expect(said).toMatch(/Merged the span profiles of \d+ span\(s\) of nemotron-backend /);
    expect(said).toMatch(/about \d+ CPU sample\(s\)/);
    // The database step of every slow request is in the graph.
    const names = levels.flat().map((item) => container.getLabel(item.itemIndexes[0]));
    expect(names).toContain('main.dbQuery');
  });

  it('shows the span profile of the request the fixture names', () => {
    const { answer, data } = model('span');
    expect(answer.fixture.query.spanSelector).toEqual([answer.fixture.spanId]);
    expect(data.name).toBe('response');
  });

  describe('the diff of a request against the service', () => {
    function diff() {
      const m = model('diff');
      const summary = m.answer.frames.find((f) => f.name === 'diff summary');
      if (!summary) {
        throw new Error(`no diff summary frame: ${m.answer.frames.map((f) => f.name)}`);
      }
      return { ...m, summary };
    }

    it('is a diff flame graph with each side once: baseline in value, comparison in valueRight', () => {
      const { data, container, levels } = diff();
      expect(container.isDiffFlamegraph()).toBe(true);
      const root = levels[0][0];
      const baseline = field(data, 'value').values[0];
      const comparison = field(data, 'valueRight').values[0];
      // Grafana adds the two fields for a node's width: the root is both sides, each counted once.
      expect(root.value).toBe(baseline + comparison);
      expect(root.valueRight).toBe(comparison);
      // The smaller side is scaled up to the other's total, so both halves of the root are equal.
      expect(Math.abs(baseline - comparison) / Math.max(baseline, comparison)).toBeLessThan(0.01);
      const rows = getDiffTooltipData(container, root, root.value);
      expect(rows[0]).toMatchObject({ label: '% of total', baseline: '100%', comparison: '100%' });
    });

    it('says each side’s real total, and which side it scaled', () => {
      const { data } = diff();
      expect(notices(data)).toMatch(
        /Baseline: \{service_name="nemotron-backend"\} over .*, total [\d.]+ \S+\. Comparison: trace [0-9a-f]{32}, total/
      );
      expect(notices(data)).toMatch(/is scaled ×[\d.e+]+ to the (comparison|baseline)'s total/);
    });

    it('gives each top function the shares of the diff summary, in its top table', () => {
      const { container, levels, summary } = diff();
      const fn = summary.fields.map((f) => f.name);
      expect(fn).toEqual(['function', 'baseline share', 'comparison share', 'change', 'self change']);
      expect(summary.length).toBeGreaterThan(0);
      // The top table (FlameGraphTopTableContainer) sums each function's outermost nodes with
      // buildFilteredTable and prints a share of each side's root total.
      const table = buildFilteredTable(container);
      const root = levels[0][0];
      const rightTotal = root.valueRight!;
      const leftTotal = root.value - rightTotal;
      const percent = (ticks: number, total: number) => Math.round((10000 * ticks) / total) / 100;
      for (let i = 0; i < summary.length; i++) {
        const name = field(summary, 'function').values[i];
        const row = table[name];
        expect(row).toBeDefined();
        const grafana = {
          name,
          baseline: percent(row.total, leftTotal),
          comparison: percent(row.totalRight, rightTotal),
        };
        const plugin = {
          name,
          baseline: field(summary, 'baseline share').values[i],
          comparison: field(summary, 'comparison share').values[i],
        };
        // Both round to hundredths of a percent; they may differ in the last digit only.
        expect(Math.abs(grafana.baseline - plugin.baseline)).toBeLessThanOrEqual(0.011);
        expect(Math.abs(grafana.comparison - plugin.comparison)).toBeLessThanOrEqual(0.011);
      }
      // The request was slow in its database step: its share grows on the comparison side.
      const names = field(summary, 'function').values;
      const db = names.indexOf('main.dbQuery');
      expect(db).toBeGreaterThanOrEqual(0);
      expect(field(summary, 'change').values[db]).toBeGreaterThan(0);
    });
  });

  describe('an empty answer', () => {
    it('is a flame graph frame Grafana can draw', () => {
      const { fixture, frames } = readAnswer('empty');
      expect(fixture.query.labelSelector).toBe('{service_name="no-such-service"}');
      expect(frames.map((f) => f.name)).toEqual(['response']);
      expect(checkFields(frames[0])).toBeUndefined();
      // The panel renders data.series[0] once its fields check out; the flame graph first builds
      // its levels, collapsing on (the component's default), which reads the root at levels[0][0].
      const container = new FlameGraphDataContainer(frames[0], { collapsing: true }, theme);
      expect(() => container.getLevels()).not.toThrow();
    });
  });
});
