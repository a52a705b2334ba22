import {
  DataFrame,
  DataTransformerConfig,
  standardTransformers,
  standardTransformersRegistry,
  transformDataFrame,
} from '@grafana/data';
import { lastValueFrom } from 'rxjs';

let registered = false;

/**
 * Grafana's app fills @grafana/data's transformer registry at start (its
 * standardTransformersRegistry.setInit in app.ts, with the same transformers and a UI for each);
 * a panel's transformations find theirs there by id.
 */
function register() {
  if (registered) {
    return;
  }
  registered = true;
  // Some transformers are exported under two names: one entry each.
  // Deprecated as public API, but what Grafana's app registers (its getStandardTransformers).
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  const unique = [...new Map(Object.values(standardTransformers).map((t) => [t.id, t])).values()];
  standardTransformersRegistry.setInit(() =>
    unique.map((t) => ({
      id: t.id,
      name: t.name,
      description: t.description,
      transformation: () => Promise.resolve(t),
      editor: () => null,
      imageDark: '',
      imageLight: '',
    }))
  );
}

/**
 * A panel's transformations applied to the frames it got, with @grafana/data's own code
 * (transformDataFrame, as Grafana's query runner does before the field config). An id Grafana
 * does not know fails here, where Grafana would pass the frames through untouched.
 */
export async function applyTransformations(
  transformations: DataTransformerConfig[],
  series: DataFrame[]
): Promise<DataFrame[]> {
  register();
  for (const t of transformations) {
    if (!standardTransformersRegistry.getIfExists(t.id)) {
      throw new Error(`no transformer ${t.id} in @grafana/data`);
    }
  }
  return lastValueFrom(transformDataFrame(transformations, series));
}
