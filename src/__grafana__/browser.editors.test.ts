// Chromium renders the query editor of each query type with @grafana/ui (see harness.ts), as wide
// as a panel editor at 1400 px and with its options pane open (about 960 px).
import type { Page } from 'puppeteer-core';

import { WIDE, look, startBrowser, text } from './harness';
import { HsiQuery, QUERY_TYPES, QueryType } from '../types';

startBrowser();

/** The panel editor with its options pane open leaves the query editor about this wide. */
const NARROW = 960;
const WIDTHS = [WIDE, NARROW];

/** Drawn, its clicks done, fonts and icons loaded (an icon keeps its size while loading, not its look). */
const READY = '[data-testid="editor"][data-ready]';
const OPTIONS = '[data-testid="editor"] button[aria-expanded="false"]';

const query = (queryType: QueryType, rest: Partial<HsiQuery> = {}): HsiQuery => ({ refId: 'A', queryType, ...rest });

interface Label {
  text: string;
  left: number;
  top: number;
  /** Lines its text takes: 1 unless it wraps. */
  lines: number;
  /** Its text or tooltip icon sticks out of it (cut off, or over the field beside it). */
  clipped: boolean;
}

/** Every label in the editor with text: the fields', the diff sides', the radio buttons'. */
const labels = (page: Page): Promise<Label[]> =>
  page.$$eval('[data-testid="editor"] label, [data-testid="editor"] fieldset > span:first-child', (els) =>
    els
      .map((el) => {
        const box = el.getBoundingClientRect();
        const tops = new Set<number>();
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const range = document.createRange();
          range.selectNodeContents(node);
          for (const r of range.getClientRects()) {
            tops.add(Math.round(r.top));
          }
        }
        return {
          text: (el.textContent ?? '').trim(),
          left: Math.round(box.left),
          top: Math.round(box.top),
          lines: tops.size,
          clipped: el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight,
        };
      })
      .filter((l) => l.text !== '')
  );

/** The tops of each editor row's fields, a row per list: one top when the row does not wrap. */
const rowTops = (page: Page): Promise<Array<{ fields: string; tops: number[] }>> =>
  page.$$eval('[data-testid="editor"] [class*="InlineFieldRow"]', (rows) =>
    rows.map((row) => {
      const children = [...row.children] as HTMLElement[];
      return {
        fields: children.map((c) => c.querySelector('label, span')?.textContent?.trim() ?? '?').join(', '),
        tops: [...new Set(children.map((c) => Math.round(c.getBoundingClientRect().top)))],
      };
    })
  );

/** The open menu's options (those drawn: the menu draws what is in view), and whether one is cut short. */
const menuOptions = (page: Page) =>
  page.$$eval('[role="option"]', (els) =>
    els.map((el) => ({
      text: (el as HTMLElement).innerText,
      // A description or label cut short ends in an ellipsis: its text is wider than its box.
      cut: [...el.querySelectorAll('div')].some((d) => d.scrollWidth > d.clientWidth),
    }))
  );

/** What a person would see wrong in the layout: labels that wrap or are cut, rows that wrap, overflow. */
async function checkLayout(page: Page) {
  const wrong = (await labels(page)).filter((l) => l.lines !== 1 || l.clipped);
  expect(wrong).toEqual([]);
  for (const row of await rowTops(page)) {
    expect(row).toEqual({ fields: row.fields, tops: [expect.any(Number)] });
  }
  // Nothing reaches past the editor's right edge (the window's, less the page's padding).
  const overflow = await page.$eval('[data-testid="editor"]', (e) => e.scrollWidth - e.clientWidth);
  expect(overflow).toBeLessThanOrEqual(0);
}

describe.each(WIDTHS)('the query editor at %i px', (width) => {
  it.each(QUERY_TYPES.map((t) => [t.value, t.label]))('%s', async (queryType, label) => {
    await look(
      `editor-${queryType}-${width}`,
      { kind: 'editor', query: query(queryType) },
      READY,
      async (page) => {
        // The first field is the query type picker, showing the type's name.
        expect(await page.$eval('[data-testid="editor"] input', (e) => (e as HTMLInputElement).value)).toBe(label);
        await checkLayout(page);
      },
      width
    );
  });

  // The less common fields, open, with values that fill them.
  const withOptions: Array<[string, HsiQuery]> = [
    [
      'profile',
      query('profile', {
        labelSelector: '{service_name="nemotron-backend"}',
        traceId: '00f067aa0ba902b700f067aa0ba902b7',
        perService: true,
        maxNodes: 4096,
      }),
    ],
    ['both', query('both', { maxNodes: 4096 })],
    [
      'diff',
      query('diff', {
        baseline: { from: 'now-1h', to: 'now', spanSelector: ['00f067aa0ba902b7', '4bf92f3577b34da6'] },
        comparison: { traceId: '$trace_id' },
      }),
    ],
    ['trace', query('trace', { traceId: '$trace_id', maxNodes: 4096 })],
  ];
  it.each(withOptions)('%s with its options open', async (name, q) => {
    await look(
      `editor-${name}-options-${width}`,
      { kind: 'editor', query: q, click: [OPTIONS] },
      READY,
      async (page) => {
        expect(await page.$('[data-testid="editor"] button[aria-expanded="true"]')).not.toBeNull();
        expect(await page.$('[data-testid="editor"] input[aria-label="Max nodes"]')).not.toBeNull();
        await checkLayout(page);
      },
      width
    );
  });

  it('says what the closed options are set to', async () => {
    const q = query('profile', { spanSelector: ['00f067aa0ba902b7'], maxNodes: 4096 });
    await look(
      `editor-profile-summary-${width}`,
      { kind: 'editor', query: q },
      READY,
      async (page) => {
        const shown = await text(page);
        expect(shown).toContain('1 span');
        expect(shown).toContain('Max nodes 4096');
        expect(shown).not.toContain('Span IDs');
      },
      width
    );
  });

  // The same fields, right and wrong; the errors open the options row themselves.
  const rightAndWrong: Array<[string, HsiQuery, HsiQuery]> = [
    [
      'profile',
      query('profile', { labelSelector: '{service_name="api"}', traceId: '00f067aa0ba902b700f067aa0ba902b7' }),
      query('profile', { labelSelector: 'service_name="api"', traceId: '00f067aa', spanSelector: ['xyz'] }),
    ],
    [
      'diff',
      query('diff', {
        baseline: { from: 'now-1h', labelSelector: '{env="prod"}' },
        comparison: { traceId: '$trace_id' },
      }),
      query('diff', { baseline: { from: '1h', labelSelector: 'env="prod"' }, comparison: { traceId: '00f067aa' } }),
    ],
  ];
  it.each(rightAndWrong)('moves no %s field aside for an error message', async (name, right, wrong) => {
    let good: Label[] = [];
    let bad: Label[] = [];
    await look(
      `editor-${name}-valid-${width}`,
      { kind: 'editor', query: right, click: [OPTIONS] },
      READY,
      async (page) => {
        good = await labels(page);
      },
      width
    );
    await look(
      `editor-${name}-errors-${width}`,
      { kind: 'editor', query: wrong },
      READY,
      async (page) => {
        expect(await page.$$('[data-testid="editor"] [role="alert"]')).not.toEqual([]);
        bad = await labels(page);
        await checkLayout(page);
      },
      width
    );
    expect(bad.map((l) => [l.text, l.left, l.lines, l.clipped])).toEqual(good.map((l) => [l.text, l.left, 1, false]));
  });

  it('describes each query type in full in the type menu', async () => {
    await look(
      `editor-type-menu-${width}`,
      { kind: 'editor', query: query('profile'), click: ['[data-testid="editor"] input'] },
      '[role="option"]',
      async (page) => {
        const options = await menuOptions(page);
        expect(options).toEqual(QUERY_TYPES.map((t) => ({ text: expect.stringContaining(t.description), cut: false })));
      },
      width
    );
  });
});

describe('the pickers, in the words of their menus', () => {
  const menu = async (page: Page) => (await menuOptions(page)).map((o) => o.text);

  it('names DCGM metrics by title and unit', async () => {
    const q = query('gpuMetrics', { metrics: ['fb_used', 'fb_used_percent'] });
    // The Metrics picker: the first field of the editor's second row.
    const click = ['[data-testid="editor"] > [class*="InlineFieldRow"]:nth-child(2) input'];
    await look(
      'editor-gpuMetrics-menu-960',
      { kind: 'editor', query: q, click },
      '[role="option"]',
      async (page) => {
        const shown = await text(page);
        // The chosen ones, told apart by their unit.
        expect(shown).toContain('Framebuffer used (MiB)');
        expect(shown).toContain('Framebuffer used (percent)');
        const options = await menuOptions(page);
        expect(options).toContainEqual({ text: expect.stringContaining('GPU utilisation (percent)'), cut: false });
        expect(options).toContainEqual({ text: expect.stringContaining('SM active (percent)'), cut: false });
        expect(options.filter((o) => o.cut)).toEqual([]);
        expect(options.map((o) => o.text).join('\n')).not.toMatch(/mbytes|rotmhz|percentunit/);
      },
      NARROW
    );
  });

  it('lists kernel files with when they were written', async () => {
    const click = ['[data-testid="editor"] input[placeholder="Found by trace ID"]'];
    await look(
      'editor-kernels-menu',
      { kind: 'editor', query: query('kernels'), click },
      '[role="option"]',
      async (page) => {
        const options = await menu(page);
        expect(options[0]).toMatch(/46\.0 MiB · written \d{4}-\d\d-\d\d \d\d:\d\d \(2 hours ago\) · trace 00f067aa/);
        expect(options[1]).toMatch(/1\.8 MiB · written 2026-01-0[456] \d\d:\d\d \(.+ ago\)$/);
      }
    );
  });

  it('lists slow traces with their spans', async () => {
    const q = query('profile', { labelSelector: '{service_name="nemotron-backend"}' });
    const click = [OPTIONS, '[data-testid="editor"] input[placeholder="Slowest first"]'];
    await look('editor-slow-traces-menu', { kind: 'editor', query: q, click }, '[role="option"]', async (page) => {
      expect(await menu(page)).toEqual([expect.stringMatching(/POST \/api\/detect · 412 ms[\s\S]*14 spans/)]);
    });
  });
});
