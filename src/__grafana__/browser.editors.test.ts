// Chromium renders the query editor of each query type with @grafana/ui (see harness.ts).
import { look, startBrowser } from './harness';
import { HsiQuery, QUERY_TYPES } from '../types';

startBrowser();

describe('the query editor of each query type', () => {
  it.each(QUERY_TYPES.map((t) => [t.value, t.label]))('%s', async (queryType, label) => {
    const query = { refId: 'A', queryType } as HsiQuery;
    await look(`editor-${queryType}`, { kind: 'editor', query }, '[data-testid="scene"] input', async (page) => {
      // The first field is the query type picker, showing the type's name.
      expect(await page.$eval('[data-testid="scene"] input', (e) => (e as HTMLInputElement).value)).toBe(label);
    });
  });
});
