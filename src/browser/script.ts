/**
 * The script tag this client was loaded by, read once while the script runs (afterwards
 * `document.currentScript` is another or none; in an ES module it is always none).
 */
import { PUBLISHABLE_KEY } from './options';

export const script =
  typeof document !== 'undefined' && document.currentScript instanceof HTMLScriptElement
    ? document.currentScript
    : null;

/** Where this script was loaded from: Rampart's origin, the default endpoint (the page's own origin for a module or a bundle). */
export const scriptOrigin = (() => {
  try {
    return script?.src ? new URL(script.src).origin : location.origin;
  } catch {
    return location.origin;
  }
})();

/** The key the script tag names: `rampart.js?pk_…` (as Castle's `c.js?<app id>`), `?pk=pk_…` or `data-publishable-key`. */
export function keyFromScriptTag(): string | null {
  if (!script) return null;
  const fromData = script.dataset.publishableKey;
  let fromSrc: string | null = null;
  try {
    const url = new URL(script.src);
    fromSrc = url.searchParams.get('pk') ?? url.search.slice(1);
  } catch {
    fromSrc = null;
  }
  for (const k of [fromData, fromSrc]) if (k && PUBLISHABLE_KEY.test(k)) return k;
  return null;
}
