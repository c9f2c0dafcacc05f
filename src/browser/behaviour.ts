/**
 * What the page saw before a token was asked for (docs/client.md): counts of trusted events only
 * (a script's dispatched events are not counted), and how the password field was filled. Nothing
 * typed is read: not a key, not a value.
 */
import type { Behaviour } from '../core/client/wire';

const isPassword = (t: EventTarget | null): t is HTMLInputElement =>
  t instanceof HTMLInputElement && t.type === 'password';

export class PageWatch {
  private readonly seen = { keys: 0, pointer: 0, pastes: 0, inputs: 0, typed: false, pasted: false };
  private started = false;

  /** Count from now on (once). */
  start(): void {
    if (this.started) return;
    this.started = true;
    const seen = this.seen;
    const on = (type: string, f: (e: Event) => void) =>
      document.addEventListener(type, (e) => e.isTrusted && f(e), { capture: true, passive: true });
    on('keydown', () => seen.keys++);
    on('pointerdown', () => seen.pointer++);
    on('paste', (e) => {
      seen.pastes++;
      if (isPassword(e.target)) seen.pasted = true;
    });
    on('input', (e) => {
      seen.inputs++;
      if (!isPassword(e.target)) return;
      const kind = (e as InputEvent).inputType ?? '';
      if (kind === 'insertFromPaste' || kind === 'insertFromDrop') seen.pasted = true;
      else if (/^(insertText|insertCompositionText|deleteContent)/.test(kind)) seen.typed = true;
    });
  }

  /** The collector's `behaviour`: the page's counts so far; `ahead` when no request needs the token yet. */
  report(ahead: boolean): Behaviour {
    const seen = this.seen;
    const fields = Array.from(document.querySelectorAll('input')).filter(isPassword);
    const password =
      fields.length === 0
        ? 'absent'
        : seen.pasted
          ? 'pasted'
          : seen.typed
            ? 'typed'
            : fields.some((f) => f.value !== '')
              ? 'filled'
              : 'empty';
    const cap = (n: number) => Math.min(n, 100_000);
    return {
      elapsedMs: Math.min(86_400_000, Math.max(0, Math.round(performance.now()))),
      keys: cap(seen.keys),
      pointer: cap(seen.pointer),
      pastes: cap(seen.pastes),
      inputs: cap(seen.inputs),
      password,
      ahead,
    };
  }
}
