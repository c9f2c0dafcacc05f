/**
 * The Android client (clients/android) from the tests: where its Maven build is and the local
 * Maven repository that scripts/setup-android.sh prepared, so that the build runs offline.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ANDROID_DIR = path.join(__dirname, '..', '..', 'clients', 'android');

/** The same rule as scripts/setup-android.sh: RAMPART_MAVEN_REPO, else a cache outside the clone. */
export function androidMavenRepo(): string {
  return process.env.RAMPART_MAVEN_REPO ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'rampart', 'maven');
}

/** Throws with the fix when the repository was never prepared (the build would try to download). */
export function assertAndroidPrepared(): void {
  const stamp = path.join(androidMavenRepo(), '.rampart-android-ready');
  if (!existsSync(stamp)) throw new Error(`the Android client's Maven dependencies are not prepared: run bash scripts/setup-android.sh (looked for ${stamp})`);
}
