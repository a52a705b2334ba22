// Chromium renders the plugin's settings page with @grafana/ui and @grafana/plugin-ui (see
// harness.ts), at a laptop's width and at a narrow window's.
import { join } from 'path';
import type { Page } from 'puppeteer-core';

import { look, text, startBrowser, WIDE } from './harness';
import type { HsiOptions } from '../types';

startBrowser();

const NARROW = 960;
const WIDTHS = [WIDE, NARROW];

// Where harness.ts leaves its screenshots; the steps after a click are kept beside them.
const screenshots = process.env.HSI_SCREENSHOTS_DIR || join(__dirname, '..', '..', '.testbed', 'screenshots');

/**
 * Every visible label or legend whose text runs onto a second line or out of its box (wrapped,
 * clipped, or spilling over the row below), with how: empty when all fit.
 */
const labelsThatDoNotFit = (page: Page) =>
  page.$$eval('[data-testid="scene"] label, [data-testid="scene"] legend', (els) =>
    els.flatMap((el) => {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) {
        return [];
      }
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      const lines = new Set<number>();
      let right = box.left;
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of Array.from(range.getClientRects())) {
          if (r.width > 0) {
            lines.add(Math.round(r.top));
            right = Math.max(right, r.right);
          }
        }
      }
      const label = (el as HTMLElement).innerText.trim();
      const problems = [
        lines.size > 1 && `${lines.size} lines`,
        right > box.right + 0.5 && `text ends ${Math.round(right - box.right)} px past the box`,
        el.scrollWidth > el.clientWidth + 1 && 'clipped',
      ].filter(Boolean);
      return problems.length ? [`${label}: ${problems.join(', ')}`] : [];
    })
  );

/** The PEM boxes of plugin-ui's TLS settings (CA certificate, client certificate and key) on the page. */
const certificateBoxes = (page: Page) =>
  page.$$eval('[data-testid="scene"] textarea', (es) => es.filter((e) => /certificate|key/.test(e.id)).length);

const pageHeight = (page: Page) => page.evaluate(() => document.body.scrollHeight);

const inputValues = (page: Page) =>
  page.$$eval('[data-testid="scene"] input', (es) => es.map((e) => (e as HTMLInputElement).value));

/** Clicks the button with this aria-label; nth counts from 0 when there are several. */
async function click(page: Page, label: string, nth = 0) {
  const button = (await page.$$(`[aria-label="${label}"]`))[nth];
  if (!button) {
    throw new Error(`no button "${label}" number ${nth + 1}`);
  }
  await button.click();
}

/** Clicks the checkbox whose label reads this text, in the element matching within. */
async function toggle(page: Page, within: string, label: string) {
  await page.$$eval(
    `${within} label`,
    (ls, want) => {
      const l = ls.find((e) => (e as HTMLElement).innerText.trim() === want);
      if (!l) {
        throw new Error(`no checkbox "${want}"`);
      }
      (l as HTMLElement).click();
    },
    label
  );
}

const filled: HsiOptions = {
  pyroscopeUrl: 'http://pyroscope:4040',
  prometheusUrl: 'http://prometheus:9090',
  jaegerUrl: 'http://jaeger:16686',
  pyroscopeTenant: 'team-gpu',
  prometheusAuth: 'basic',
  prometheusBasicAuthUser: 'grafana',
  prometheusTimeoutSeconds: 60,
  jaegerTlsSkipVerify: true,
  minStep: '30s',
  gpuMaxSeries: 200,
  traceDirectories: ['/var/lib/traces'],
  traceMaxFileBytes: 4294967296,
  gpuThresholds: { computeBoundPct: 85, pcieBoundLinkShare: 0.6 },
  requestDashboardUid: 'my-requests',
};

describe('the settings page', () => {
  for (const width of WIDTHS) {
    it(`empty, ${width} px wide: short, no certificate boxes, every label on one line`, async () => {
      await look(
        `settings-empty-${width}`,
        { kind: 'config', jsonData: {} },
        'input',
        async (page) => {
          const shown = await text(page);
          for (const section of ['Pyroscope', 'Prometheus', 'Jaeger', 'Additional settings']) {
            expect(shown).toContain(section);
          }
          expect(shown).not.toMatch(/A duration such as|A whole number from|Start with http|Seconds from/);
          // The page before this layout was 2,165 px tall, nine PEM boxes first.
          expect(await pageHeight(page)).toBeLessThan(1500);
          expect(await certificateBoxes(page)).toBe(0);
          expect(await labelsThatDoNotFit(page)).toEqual([]);

          // Open every folded section: their labels must fit too.
          for (;;) {
            const closed = await page.$('[data-testid="scene"] button[aria-label^="Expand section"]');
            if (!closed) {
              break;
            }
            await closed.click();
          }
          await page.screenshot({ path: join(screenshots, `settings-open-${width}.png`), fullPage: true });
          expect(await labelsThatDoNotFit(page)).toEqual([]);
          // Still no certificate box: they wait behind their TLS toggles.
          expect(
            await page.$$eval('[data-testid="scene"] textarea', (es) =>
              es.map((e) => e.getAttribute('aria-label') ?? e.id)
            )
          ).not.toContainEqual(expect.stringMatching(/certificate|key/i));
        },
        width
      );
    });

    it(`Tempo as the trace store, ${width} px wide: its section with tenant, Jaeger's kept out of sight`, async () => {
      await look(
        `settings-tempo-${width}`,
        {
          kind: 'config',
          jsonData: {
            jaegerUrl: 'http://jaeger:16686',
            tempoUrl: 'https://tempo-prod-10-prod-eu-west-2.grafana.net/tempo',
            tempoTenant: 'team-gpu',
            tempoAuth: 'basic',
            tempoBasicAuthUser: '123456',
            traceStore: 'tempo',
          },
          secureJsonFields: { tempoBasicAuthPassword: true },
        },
        'input',
        async (page) => {
          const values = await inputValues(page);
          expect(values).toContain('https://tempo-prod-10-prod-eu-west-2.grafana.net/tempo');
          expect(values).toContain('team-gpu');
          expect(values).not.toContain('http://jaeger:16686');
          const shown = await text(page);
          expect(shown).toContain('Tempo');
          expect(shown).toContain('Basic authentication as 123456');
          // The picked store is Tempo.
          expect(
            await page.$eval('[data-testid="scene"] input[type="radio"]:checked', (e) =>
              e.ownerDocument.querySelector(`label[for="${e.id}"]`)?.textContent?.trim()
            )
          ).toBe('Tempo');
          // The empty page's bound and Tempo's tenant row (Jaeger has none).
          expect(await pageHeight(page)).toBeLessThan(1500 + 40);
          expect(await labelsThatDoNotFit(page)).toEqual([]);
        },
        width
      );
    });

    it(`filled, ${width} px wide: stored values shown, secrets as configured`, async () => {
      await look(
        `settings-filled-${width}`,
        { kind: 'config', jsonData: filled, secureJsonFields: { prometheusBasicAuthPassword: true } },
        'input',
        async (page) => {
          const values = await inputValues(page);
          for (const v of [
            'http://pyroscope:4040',
            'http://prometheus:9090',
            'http://jaeger:16686',
            'team-gpu',
            '60',
            '30s',
            '200',
            '4294967296',
            '85',
            'my-requests',
          ]) {
            expect(values).toContain(v);
          }
          const shown = await text(page);
          expect(shown).toContain('Basic authentication as grafana');
          expect(shown).toContain('TLS certificate not verified');
          expect(shown).not.toMatch(/A duration such as|A whole number from|Start with http|Seconds from/);
          expect(await labelsThatDoNotFit(page)).toEqual([]);

          // Prometheus' authentication: the stored password shows as configured, and a
          // certificate box appears only once its TLS toggle is on.
          await click(page, 'Expand section Authentication and TLS', 1);
          await page.waitForSelector('#basic-auth-user-input');
          expect(await page.$eval('#basic-auth-user-input', (e) => (e as HTMLInputElement).value)).toBe('grafana');
          expect(await page.$eval('#basic-auth-password-input', (e) => (e as HTMLInputElement).value)).toBe(
            'configured'
          );
          expect(await certificateBoxes(page)).toBe(0);
          await toggle(page, '[data-testid="prometheus-auth"]', 'Add self-signed certificate');
          await page.waitForSelector('#self-signed-certificate-input');
          expect(await certificateBoxes(page)).toBe(1);
          await page.screenshot({ path: join(screenshots, `settings-filled-auth-${width}.png`), fullPage: true });
          expect(await labelsThatDoNotFit(page)).toEqual([]);
        },
        width
      );
    });

    it(`kernel-trace buckets, ${width} px wide: stored buckets shown, credentials as configured, added and checked`, async () => {
      const jsonData = {
        kernelBuckets: [
          {
            name: 'fleet',
            provider: 's3',
            bucket: 'gpu-traces',
            prefix: 'kernels',
            endpoint: 'seaweedfs:8333',
            region: 'eu-west-1',
            insecure: true,
          },
          { name: 'lab', provider: 'gcs', bucket: 'lab-traces' },
        ],
      } as HsiOptions;
      const secureJsonFields = { 'kernelBucket.fleet.accessKey': true, 'kernelBucket.fleet.secretKey': true };
      await look(
        `settings-buckets-${width}`,
        { kind: 'config', jsonData, secureJsonFields },
        'input',
        async (page) => {
          const values = await inputValues(page);
          for (const v of ['fleet', 'gpu-traces', 'kernels', 'seaweedfs:8333', 'eu-west-1', 'lab', 'lab-traces']) {
            expect(values).toContain(v);
          }
          const secret = (label: string) =>
            page.$eval(`[aria-label="${label}"]`, (e) => (e as HTMLInputElement | HTMLTextAreaElement).value);
          expect(await secret('bucket 1 access key')).toBe('configured');
          expect(await secret('bucket 1 secret key')).toBe('configured');
          expect(await secret('bucket 2 service account')).toBe(''); // GCS: not set yet
          expect(await page.$eval('[aria-label="bucket 1 plain HTTP"]', (e) => (e as HTMLInputElement).checked)).toBe(
            true
          );
          const shown = await text(page);
          expect(shown).toMatch(/GPU kernel traces[^]*Trace directories[^]*Buckets/);
          expect(shown).not.toMatch(/Set the bucket|needs an absolute directory|Another bucket is named/);
          expect(await labelsThatDoNotFit(page)).toEqual([]);

          // A third bucket: S3 by default, its credentials empty; a name the backend would refuse
          // is said under the field; Azure asks for its container and account.
          await page.$$eval('[data-testid="scene"] button', (bs) =>
            (bs.find((b) => (b as HTMLElement).innerText.trim() === 'Add bucket') as HTMLElement).click()
          );
          await page.waitForSelector('[aria-label="bucket 3 name"]');
          expect(await secret('bucket 3 access key')).toBe('');
          expect(await text(page)).toContain('Set the bucket');
          await page.$eval('[aria-label="bucket 3 name"]', (e) => (e as HTMLInputElement).select());
          await page.type('[aria-label="bucket 3 name"]', 'fleet');
          await page.waitForFunction(() => document.body.innerText.includes('Another bucket is named fleet'));
          await page.$$eval('[aria-label="bucket 3"] label', (ls) =>
            (ls.find((l) => (l as HTMLElement).innerText.trim() === 'Azure') as HTMLElement).click()
          );
          await page.waitForSelector('[aria-label="bucket 3 storage account"]');
          expect(await secret('bucket 3 account key')).toBe('');
          expect(await text(page)).toContain('Container');
          await page.screenshot({ path: join(screenshots, `settings-buckets-added-${width}.png`), fullPage: true });
          expect(await labelsThatDoNotFit(page)).toEqual([]);

          // Removed, it is gone with its fields.
          await click(page, 'Remove bucket 3');
          await page.waitForFunction(() => !document.querySelector('[aria-label="bucket 3 name"]'));
          expect(await inputValues(page)).toContain('lab-traces');
        },
        width
      );
    });

    it(`invalid, ${width} px wide: says what the backend would refuse, under the field`, async () => {
      const jsonData = {
        pyroscopeUrl: 'pyroscope:4040',
        jaegerUrl: 'http://user:pw@jaeger:16686',
        prometheusTimeoutSeconds: 500,
        jaegerTimeoutSeconds: 0,
        pyroscopeAuth: 'bearer',
        minStep: '5 minutes',
        gpuMaxSeries: 0,
      } as HsiOptions;
      await look(
        `settings-invalid-${width}`,
        { kind: 'config', jsonData },
        'input',
        async (page) => {
          const shown = await text(page);
          expect(shown).toContain('Start with http:// or https://, e.g. http://localhost:4040');
          expect(shown).toContain('No user or password in the URL: see Authentication');
          expect(shown.match(/Seconds from 1 to 300/g)).toHaveLength(2);
          expect(shown).toContain('Bearer authentication needs a token');
          expect(shown).toContain('A duration such as 15s, 1m or 1d');
          expect(shown).toContain('A whole number from 1 to 10000');
          expect(await labelsThatDoNotFit(page)).toEqual([]);
        },
        width
      );
    });
  }
});
