/** Edits of a Prometheus-style label selector made by the editor's pickers. */

const quote = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

const matcher = (name: string) => new RegExp(`([{,]\\s*)${name}\\s*(=~|!=|!~|=)\\s*"(?:[^"\\\\]|\\\\.)*"`);

/**
 * Sets name="value" in the selector: replaces any matcher on that label, otherwise adds one
 * (first, for service_name, so the selector reads service first; last for the others).
 */
export function setMatcher(selector: string, name: string, value: string, first = false): string {
  const wanted = `${name}=${quote(value)}`;
  const s = selector.trim();
  const re = matcher(name);
  if (re.test(s)) {
    return s.replace(re, (_all, before: string) => before + wanted);
  }
  const inner = s.startsWith('{') && s.endsWith('}') ? s.slice(1, -1).trim() : s;
  const parts = inner === '' ? [wanted] : first ? [wanted, inner] : [inner, wanted];
  return `{${parts.join(', ')}}`;
}

/** The value of an equality matcher on the label, if the selector has one. */
export function matcherValue(selector: string, name: string): string | undefined {
  const m = new RegExp(`[{,]\\s*${name}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(selector);
  return m ? m[1].replace(/\\(.)/g, '$1') : undefined;
}
