import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CliError } from './cli-error.js';
import { assertNoLinkOnTheWay, assertSafePaths, inside } from './safe-paths.js';
import type { VerifiedSkill } from './verify.js';

export interface WriteOptions {
  /** The working directory: links in the folder's path are looked for below it (docs/cli.md). */
  base: string;
  /** Replace a folder already at `<root>/<name>`; otherwise anything there is refused. */
  replace: boolean;
  /** What the refusal of an existing folder advises, e.g. `pass --force to replace it`. */
  advice?: string;
}

const exists = (path: string) =>
  lstat(path).then(
    (s) => s,
    () => undefined,
  );

/**
 * Writes a verified skill as `<root>/<name>/`, all or nothing: the files go to a fresh temporary
 * folder inside `root`, which then takes the skill folder's place by a rename. Every file is a
 * plain file (mode 0644, never executable) created anew inside the temporary folder, so no name
 * and no pre-existing link can make it land outside. A link in `root`'s path or at the skill
 * folder is refused, and so is an existing skill folder unless `replace`. Scripts are written,
 * never run. `install` and `buy --save` both write through here.
 */
export async function writeSkill(root: string, skill: VerifiedSkill, opts: WriteOptions): Promise<string> {
  assertSafePaths(skill.files.map((f) => f.path));
  const target = inside(root, skill.name);
  await assertNoLinkOnTheWay(opts.base, target);
  const was = await exists(target);
  if (was && !opts.replace)
    throw new CliError(
      'target_exists',
      `refused: ${target} already exists and is not replaced; ${opts.advice ?? 'move it away or choose another folder'}`,
    );
  await mkdir(root, { recursive: true });
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
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST')
        throw new CliError('target_exists', `refused: ${target} appeared while the skill was being written`);
      throw err;
    }
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  if (old) await rm(old, { recursive: true, force: true });
  return target;
}
