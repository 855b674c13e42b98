import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from './config.js';

/** A development secret as kept in the data directory. */
export interface DevSecret {
  value: string;
  /** The file it is kept in. */
  path: string;
  /** Whether this call generated it (false: an earlier start did). */
  created: boolean;
}

let temporaries = 0;

/**
 * The secret kept in `dir/name`, generated and written (mode 0600, in a directory of mode 0700)
 * by the first start that needs it, read back by every later one, so a restart signs with the
 * same key. Processes starting together on one data directory agree: the file is written under a
 * temporary name and linked into place, which fails for every process but the first, and the
 * others read the winner's. `check` names what is wrong with a value (undefined when it is
 * fine); a file that fails it is refused with a ConfigError, never replaced, since documents and
 * tokens may already name the key it holds. For development only: production keys come from
 * configuration.
 */
export function keepDevSecret(
  dir: string,
  name: string,
  generate: () => string,
  check: (value: string) => string | undefined,
): DevSecret {
  const path = join(dir, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let created = false;
  if (!exists(path)) {
    const temporary = `${path}.${process.pid}-${++temporaries}.tmp`;
    writeFileSync(temporary, `${generate()}\n`, { mode: 0o600, flag: 'wx' });
    try {
      linkSync(temporary, path);
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      rmSync(temporary, { force: true });
    }
  }
  // A copy made readable by others (restored from a backup, say) is made private again.
  if (statSync(path).mode & 0o077) chmodSync(path, 0o600);
  const value = readFileSync(path, 'utf8').trim();
  const problem = check(value);
  if (problem) throw new ConfigError([`${path} ${problem}: fix it, or delete it to generate a new key`]);
  return { value, path, created };
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
