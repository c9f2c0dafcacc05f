/**
 * Small helpers of the browser client: a guarded call, a string hash, and setting a hidden field
 * of a form.
 */

/** `f()`, or `fallback` when it throws (a browser without one of the APIs a component reads). */
export const attempt = <T>(f: () => T, fallback: T): T => {
  try {
    return f();
  } catch {
    return fallback;
  }
};

/** A 53-bit string hash (cyrb53): stable, fast, not a security measure. */
export function hash(s: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

/** Set (adding it when missing) the hidden field `name` of `form`. */
export function setField(form: HTMLFormElement, name: string, value: string): void {
  let input = Array.from(form.querySelectorAll('input')).find((i) => i.name === name);
  if (!input) {
    input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    form.appendChild(input);
  }
  input.value = value;
}
