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

/** A profile ID as Pyroscope's exemplars give them. */
const PROFILE_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

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

/**
 * The open menu's options, up to want of them: it is scrolled down a page at a time, for the
 * options below to be drawn, until it has shown that many or goes no further.
 */
async function allMenuOptions(page: Page, want: number) {
  const seen = new Map<string, { text: string; cut: boolean }>();
  for (;;) {
    const drawn = await menuOptions(page);
    drawn.forEach((o) => seen.set(o.text, o));
    if (seen.size >= want) {
      return [...seen.values()];
    }
    const moved = await page.$eval('[role="option"]', (option) => {
      let box = option.parentElement;
      while (box && box.scrollHeight <= box.clientHeight) {
        box = box.parentElement;
      }
      if (!box) {
        return false;
      }
      const before = box.scrollTop;
      box.scrollTop = before + box.clientHeight;
      return box.scrollTop !== before;
    });
    if (!moved) {
      return [...seen.values()];
    }
    // Until the menu has drawn the options scrolled into view.
    await page.waitForFunction(
      (was) =>
        [...document.querySelectorAll<HTMLElement>('[role="option"]')].map((o) => o.innerText).join('\n') !== was,
      {},
      drawn.map((o) => o.text).join('\n')
    );
  }
}

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
  // An error message runs past its field to the right: never over the message of the field beside it.
  const messages = await page.$$eval('[data-testid="editor"] [role="alert"]', (els) =>
    els.map((e) => {
      const { left, right, top, bottom } = e.getBoundingClientRect();
      return { text: (e.textContent ?? '').trim(), left, right, top, bottom };
    })
  );
  const covered = messages.flatMap((a, i) =>
    messages
      .slice(i + 1)
      .filter((b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
      .map((b) => [a.text, b.text])
  );
  expect(covered).toEqual([]);
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

  // The less common fields, open, with values that fill them, and a field the options row holds.
  const withOptions: Array<[string, HsiQuery, string]> = [
    [
      'profile',
      query('profile', {
        labelSelector: '{service_name="nemotron-backend"}',
        traceId: '00f067aa0ba902b700f067aa0ba902b7',
        perService: true,
        maxNodes: 4096,
        stackTraceSelector: ['main', 'serve', 'handle'],
      }),
      'Call site',
    ],
    [
      'both',
      query('both', {
        maxNodes: 4096,
        includeExemplars: true,
        profileIdSelector: [PROFILE_ID],
        stackTraceSelector: ['main', 'handle'],
      }),
      'Max nodes',
    ],
    [
      'metrics',
      query('metrics', { includeExemplars: true, includeHeatmap: true, heatmapType: 'span', annotations: true }),
      'Exemplars',
    ],
    [
      'diff',
      query('diff', {
        baseline: { from: 'now-1h', to: 'now', spanSelector: ['00f067aa0ba902b7', '4bf92f3577b34da6'] },
        comparison: { traceId: '$trace_id' },
      }),
      'Max nodes',
    ],
    ['trace', query('trace', { traceId: '$trace_id', maxNodes: 4096 }), 'Max nodes'],
    [
      'spanHeatmap',
      query('spanHeatmap', {
        service: 'nemotron-backend',
        operation: 'POST /api/detect',
        minDuration: '20ms',
        limit: 1000,
        maxNodes: 4096,
      }),
      'Limit',
    ],
    [
      'spanProfile',
      query('spanProfile', {
        service: 'nemotron-backend',
        operation: 'POST /api/detect',
        percentile: 95,
        profileTypeId: 'memory:alloc_space:bytes:space:bytes',
        limit: 1000,
      }),
      'Max nodes',
    ],
  ];
  it.each(withOptions)('%s with its options open', async (name, q, field) => {
    await look(
      `editor-${name}-options-${width}`,
      { kind: 'editor', query: q, click: [OPTIONS] },
      READY,
      async (page) => {
        expect(await page.$('[data-testid="editor"] button[aria-expanded="true"]')).not.toBeNull();
        expect(await page.$(`[data-testid="editor"] input[aria-label="${field}"]`)).not.toBeNull();
        await checkLayout(page);
      },
      width
    );
  });

  it("says which of Grafana's Pyroscope options are on while closed", async () => {
    const q = query('both', {
      includeExemplars: true,
      includeHeatmap: true,
      heatmapType: 'span',
      stackTraceSelector: ['main', 'handle'],
    });
    await look(
      `editor-both-summary-${width}`,
      { kind: 'editor', query: q },
      READY,
      async (page) => {
        const shown = await text(page);
        expect(shown).toContain('Exemplars');
        expect(shown).toContain('Heatmap: span');
        expect(shown).toContain('Call site: … › handle');
        expect(shown).not.toContain('Annotations');
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
    [
      'both',
      query('both', { profileIdSelector: [PROFILE_ID], stackTraceSelector: ['main', 'handle'] }),
      query('both', { profileIdSelector: [PROFILE_ID, '7c9e6679'], stackTraceSelector: ['main', '', 'handle'] }),
    ],
    [
      'spanProfile',
      query('spanProfile', { service: 'api', minDuration: '20ms', limit: 1000 }),
      query('spanProfile', { service: 'api', minDuration: '20 ms', percentile: 120, limit: 2000 }),
    ],
    [
      'spanHeatmap',
      query('spanHeatmap', { service: 'api', minDuration: '20ms', limit: 1000 }),
      query('spanHeatmap', { service: 'api', minDuration: '-20ms', limit: 2000 }),
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
        const options = await allMenuOptions(page, QUERY_TYPES.length);
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

  it("lists the chosen service's operations", async () => {
    const q = query('spanHeatmap', { service: 'nemotron-backend' });
    const click = ['[data-testid="editor"] input[placeholder="All operations"]'];
    await look('editor-operations-menu', { kind: 'editor', query: q, click }, '[role="option"]', async (page) => {
      expect(await menu(page)).toEqual(['GET /health', 'POST /api/detect', 'infer']);
    });
  });

  it('lists slow traces with their spans', async () => {
    const q = query('profile', { labelSelector: '{service_name="nemotron-backend"}' });
    const click = [OPTIONS, '[data-testid="editor"] input[placeholder="Slowest first"]'];
    await look('editor-slow-traces-menu', { kind: 'editor', query: q, click }, '[role="option"]', async (page) => {
      expect(await menu(page)).toEqual([expect.stringMatching(/POST \/api\/detect · 412 ms[\s\S]*14 spans/)]);
    });
  });
});
