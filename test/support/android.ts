/**
 * The Android client (clients/android) from the tests: where its Maven build is and the local
 * Maven repository that scripts/setup-android.sh prepared, so that the build runs offline.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ANDROID_DIR = path.join(__dirname, '..', '..', 'clients', 'android');

/** The same rule as scripts/setup-android.sh: RAMPART_MAVEN_REPO, else a cache outside the clone. */
export function androidMavenRepo(): string {
  return (
    process.env.RAMPART_MAVEN_REPO ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'rampart', 'maven')
  );
}

/**
 * Throws with the fix when the repository was not prepared for this pom (the offline build would
 * fail on a missing artifact): setup-android.sh stamps it with the pom's SHA-256.
 */
export function assertAndroidPrepared(): void {
  const stamp = path.join(androidMavenRepo(), '.rampart-android-ready');
  const pom = createHash('sha256')
    .update(readFileSync(path.join(ANDROID_DIR, 'pom.xml')))
    .digest('hex');
  const prepared = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : null;
  if (prepared !== pom)
    throw new Error(
      `the Android client's Maven dependencies are not prepared for its pom.xml: run bash scripts/setup-android.sh (stamp ${stamp})`,
    );
}
