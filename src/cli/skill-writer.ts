import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CliError } from './cli-error.js';
import { assertSafePaths, inside } from './safe-paths.js';
import type { VerifiedSkill } from './verify.js';

const exists = (path: string) =>
  lstat(path).then(
    (s) => s,
    () => undefined,
  );

/**
 * Writes a verified skill as `<root>/<name>/`, all or nothing: the files go to a fresh temporary
 * folder inside `root`, which then replaces the skill's folder by a rename. Every file is a plain
 * file (mode 0644, never executable) created anew inside the temporary folder, so no name and no
 * pre-existing link can make it land outside. Scripts are written, never run.
 */
export async function writeSkill(root: string, skill: VerifiedSkill): Promise<string> {
  assertSafePaths(skill.files.map((f) => f.path));
  await mkdir(root, { recursive: true });
  const target = inside(root, skill.name);
  const was = await exists(target);
  if (was && !was.isDirectory())
    throw new CliError('target_not_a_folder', `refused: ${target} exists and is not a folder (a link or a file)`);
  const staging = await mkdtemp(join(root, `.${skill.name}.installing-`));
  let old: string | undefined;
  try {
    // mkdtemp makes a private folder; the installed skill reads like any other folder.
    await chmod(staging, 0o755);
    for (const file of skill.files) {
      const path = inside(staging, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.content, { encoding: 'utf8', flag: 'wx', mode: 0o644 });
    }
    if (was) {
      old = join(root, `.${skill.name}.replaced-${randomBytes(4).toString('hex')}`);
      await rename(target, old);
    }
    try {
      await rename(staging, target);
    } catch (err) {
      if (old) await rename(old, target);
      old = undefined;
      throw err;
    }
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  if (old) await rm(old, { recursive: true, force: true });
  return target;
}
