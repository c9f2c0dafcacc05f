/** Formatting shared by every page: times in UTC, risks, bytes. */

export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function shortTime(iso: string): string {
  return new Date(iso).toISOString().slice(5, 16).replace('T', ' ');
}

export const risk = (r: number | null | undefined): string =>
  r === null || r === undefined ? '—' : r.toFixed(2);

export const count = (n: number): string => n.toLocaleString('en');

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** `a, b, c` from a comma- or space-separated text box; empty → null. */
export function listOf(text: string): string[] | null {
  const items = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : null;
}

/** A datetime-local input's value (read as UTC) as ISO 8601, or null. */
export function fromLocalInput(v: string): string | null {
  if (!v) return null;
  const d = new Date(v.length === 16 ? `${v}:00Z` : `${v}Z`);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** ISO 8601 as a datetime-local input's value (UTC). */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().slice(0, 16);
}
