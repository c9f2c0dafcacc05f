/**
 * The fake log, in a module of its own: a unit test that needs only it (or only the clock, or one
 * store) imports that module, not fakes/index.ts, which loads every service of the core.
 */

/** Logs nothing, keeps every line (a test may assert what was logged). */
export function createFakeLog() {
  const lines: { level: string; obj: object; msg: string }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, obj, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
