/**
 * The editor's early warnings. The backend validates every field again (pkg/models/query.go) and
 * has the last word; these only catch typos while the user is still looking at the field.
 * Anything holding a template variable is left alone: it is only known once interpolated.
 */

const VARIABLE = /\$\w+|\$\{[^}]+\}|\[\[[^\]]+\]\]/;

export const hasVariable = (s: string) => VARIABLE.test(s);

const hex = (s: string, n: number) => s.length === n && /^[0-9a-f]+$/i.test(s);

export function traceIdError(id = ''): string | undefined {
  const s = id.trim();
  if (s === '' || hasVariable(s) || hex(s, 16) || hex(s, 32)) {
    return undefined;
  }
  return 'A trace ID has 16 or 32 hex digits';
}

export function spanIdsError(ids: string[] = []): string | undefined {
  const bad = ids.find((id) => !hasVariable(id) && !hex(id.trim(), 16));
  return bad === undefined ? undefined : `"${bad}" is not a span ID (16 hex digits)`;
}

export function profileTypeError(id = ''): string | undefined {
  if (id === '' || hasVariable(id)) {
    return undefined;
  }
  const parts = id.split(':');
  return parts.length === 5 && parts.every((p) => p.trim() !== '')
    ? undefined
    : 'A profile type has five parts: name:sample_type:sample_unit:period_type:period_unit';
}

export function selectorError(selector = ''): string | undefined {
  const s = selector.trim();
  if (s === '' || hasVariable(s)) {
    return undefined;
  }
  if (!s.startsWith('{') || !s.endsWith('}')) {
    return 'A label selector looks like {service_name="api", env=~"prod.*"}';
  }
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && quoted) {
      i++;
    } else if (s[i] === '"') {
      quoted = !quoted;
    }
  }
  return quoted ? 'The label selector has an unclosed quote' : undefined;
}

/** Diff side ends: Unix milliseconds, now, or now minus a duration (now-1h, now-30m, now-2d). */
export function timeError(t = ''): string | undefined {
  const s = t.trim();
  if (s === '' || hasVariable(s) || /^\d+$/.test(s) || /^now(-(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+)?$/.test(s)) {
    return undefined;
  }
  return 'Unix milliseconds or a relative time: now, now-1h, now-2d';
}

const GO_DURATION = /^((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/;

/** Slow requests' minimum duration, as Go reads it (500ms, 1.5s, 1m30s), or plain milliseconds. */
export function durationError(d = ''): string | undefined {
  const s = d.trim();
  if (s === '' || hasVariable(s) || /^\d+(\.\d+)?$/.test(s) || GO_DURATION.test(s)) {
    return undefined;
  }
  return 'A duration like 500ms, 1.5s or 1m30s';
}

/** Everything the traceId and spanSelector fields of one query or diff side should say. */
export function requestErrors(traceId?: string, spanIds?: string[]) {
  return {
    traceId: traceIdError(traceId),
    spanSelector:
      spanIdsError(spanIds) ??
      (traceId && spanIds?.length
        ? 'Use either a trace ID or span IDs: a trace ID already selects its spans'
        : undefined),
  };
}
