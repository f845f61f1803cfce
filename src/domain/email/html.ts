// HTML we generate ourselves (e-mail bodies, the acceptance pages): every interpolated value is
// escaped unless it is itself a fragment built by `html`, so nothing user-supplied is ever markup.

export class HtmlFragment {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

function render(value: unknown): string {
  if (value instanceof HtmlFragment) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<p>${name}</p>\`` escapes `name`; nested fragments and arrays of them are kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): HtmlFragment {
  let out = strings[0]!;
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!));
  return new HtmlFragment(out);
}

/** Markup written by us (never data): inserted as is. */
export const trustedHtml = (markup: string) => new HtmlFragment(markup);
