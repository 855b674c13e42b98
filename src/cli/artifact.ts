import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import { CliError } from './cli-error.js';
import { unsafePathReason } from './safe-paths.js';

/**
 * A skill's artifact as the Agent Skills discovery draft names it (`type`, `url`, `digest`): one
 * SKILL.md, or an archive of the folder. The installer downloads it, checks the SHA-256 of its raw
 * bytes before it reads anything in it, then unpacks it with the draft's archive safety rules.
 */
export interface SkillArtifact {
  type: 'skill-md' | 'archive';
  url: string;
  digest: string;
}

export interface ArtifactFile {
  path: string;
  content: string;
}

/** The most an archive may unpack to, and hold: far above the market's 200,000-byte skills. */
const MAX_UNPACKED = 8 * 1024 * 1024;
const MAX_ENTRIES = 1_000;

const sha256 = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** The raw bytes at `url`, checked against `digest` (digest_mismatch when they differ). */
export async function fetchArtifact(
  artifact: SkillArtifact,
  base: string,
  fetchImpl: typeof fetch,
): Promise<{ bytes: Buffer; status: number }> {
  const url = new URL(artifact.url, base).toString();
  const res = await fetchImpl(url).catch((err: unknown) => {
    throw new CliError('market_unreachable', `GET ${url} failed: ${(err as Error).message}`);
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (!res.ok) return { bytes, status: res.status };
  if (sha256(bytes) !== artifact.digest)
    throw new CliError(
      'digest_mismatch',
      `refused: the ${artifact.type} at ${url} has digest ${sha256(bytes)}, not the ${artifact.digest} the index lists: ` +
        'the copy was altered on its way',
    );
  return { bytes, status: res.status };
}

/**
 * The files of an archive whose digest was checked: a tar.gz (the market's) holding regular files
 * only, each at a safe relative path, at most 8 MiB unpacked. Links, devices, traversal and
 * absolute paths are refused (not_an_agent_skill or unsafe_path), never skipped.
 */
export async function unpackArchive(bytes: Buffer): Promise<ArtifactFile[]> {
  const files: ArtifactFile[] = [];
  let total = 0;
  const tar = extract();
  const done = new Promise<void>((resolve, reject) => {
    tar.on('entry', (header, stream, next) => {
      const path = header.name.replace(/^\.\//, '');
      const refuse = (err: CliError) => {
        stream.resume();
        reject(err);
        tar.destroy(err);
      };
      if (header.type === 'directory') {
        stream.resume();
        stream.on('end', next);
        return;
      }
      if (header.type !== 'file')
        return refuse(new CliError('unsafe_path', `refused: the archive holds a ${header.type} entry ${path}`));
      const reason = unsafePathReason(path);
      if (reason) return refuse(new CliError('unsafe_path', `refused: the archive holds ${path}: ${reason}`));
      if (files.length >= MAX_ENTRIES)
        return refuse(new CliError('not_an_agent_skill', `refused: the archive holds more than ${MAX_ENTRIES} files`));
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => {
        if (!Buffer.isBuffer(c)) return;
        total += c.length;
        if (total > MAX_UNPACKED)
          refuse(new CliError('not_an_agent_skill', `refused: the archive unpacks to more than ${MAX_UNPACKED} bytes`));
        else chunks.push(c);
      });
      stream.on('end', () => {
        files.push({ path, content: Buffer.concat(chunks).toString('utf8') });
        next();
      });
    });
    tar.on('finish', resolve);
    tar.on('error', reject);
  });
  const gunzip = createGunzip();
  gunzip.on('error', (err) =>
    tar.destroy(new CliError('not_an_agent_skill', `refused: the archive is not gzip: ${err.message}`)),
  );
  Readable.from([bytes]).pipe(gunzip).pipe(tar);
  await done;
  if (!files.some((f) => f.path === 'SKILL.md'))
    throw new CliError('not_an_agent_skill', 'refused: the archive has no SKILL.md at its root');
  return files;
}

/** The files an artifact holds: SKILL.md alone, or the archive's. */
export async function artifactFiles(artifact: SkillArtifact, bytes: Buffer): Promise<ArtifactFile[]> {
  return artifact.type === 'skill-md' ? [{ path: 'SKILL.md', content: bytes.toString('utf8') }] : unpackArchive(bytes);
}
