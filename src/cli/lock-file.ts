import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError } from './cli-error.js';

/** The lock file's name, in the skills folder beside the skills it records. */
export const LOCK_FILE = '.skill-market-lock.json';

/** What was installed as one skill folder: enough to check it and to update it. */
export interface LockedSkill {
  postId: string;
  market: string;
  version: number;
  versionLabel: string;
  skillDigest: string;
  files: { path: string; digest: string }[];
  /** The seller wallet whose signature was checked, or null when installed unsigned. */
  signer: string | null;
  installedAt: string;
}

export interface LockFile {
  lockfileVersion: 1;
  skills: Record<string, LockedSkill>;
}

/** The lock file of a skills folder (an empty one when there is none yet). */
export async function readLock(root: string): Promise<LockFile> {
  let text: string;
  try {
    text = await readFile(join(root, LOCK_FILE), 'utf8');
  } catch {
    return { lockfileVersion: 1, skills: {} };
  }
  try {
    const lock = JSON.parse(text) as LockFile;
    if (lock.lockfileVersion !== 1 || typeof lock.skills !== 'object' || lock.skills === null) throw new Error();
    return lock;
  } catch {
    throw new CliError('lock_file_unreadable', `${join(root, LOCK_FILE)} is not a lock file this installer wrote`);
  }
}

/** Records one installed skill, replacing the lock file by a rename (never half-written). */
export async function recordInLock(root: string, name: string, entry: LockedSkill): Promise<void> {
  const lock = await readLock(root);
  const skills = Object.fromEntries(
    Object.entries({ ...lock.skills, [name]: entry }).sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const path = join(root, LOCK_FILE);
  const staging = `${path}.${randomBytes(4).toString('hex')}`;
  await writeFile(staging, `${JSON.stringify({ lockfileVersion: 1, skills }, null, 2)}\n`, { mode: 0o644 });
  await rename(staging, path);
}
