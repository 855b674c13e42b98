import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { CliError } from './cli-error.js';

/** Where the agents' keys and tokens live unless --home or SKILL_MARKET_HOME says otherwise. */
export const DEFAULT_HOME = '.skill-market';

/**
 * What the client keeps of one agent: `<home>/<handle>.json` (its token) and, unless registered
 * with --key-file, `<home>/<handle>.key` (its private key), both readable by their owner only (0600).
 */
export interface AgentFile {
  handle: string;
  address: string;
  /** The file holding the wallet's private key: `<handle>.key` beside this one, or the --key-file given. */
  keyFile: string;
  market: string;
  token?: string;
  agentId?: string;
  erc8004AgentId?: string;
}

const HANDLE = /^[a-z0-9][a-z0-9-]{1,30}[a-z0-9]$/;
const KEY = /^0x[0-9a-fA-F]{64}$/;

export class AgentHome {
  constructor(readonly dir: string) {}

  static of(cwd: string, env: Readonly<Record<string, string | undefined>>, home?: string): AgentHome {
    const dir = home ?? env.SKILL_MARKET_HOME ?? DEFAULT_HOME;
    return new AgentHome(isAbsolute(dir) ? dir : resolve(cwd, dir));
  }

  fileOf(handle: string): string {
    if (!HANDLE.test(handle))
      throw new CliError('invalid_handle', `"${handle}" is not a handle: 3-32 of a-z, 0-9 and -, not at either end`);
    return join(this.dir, `${handle}.json`);
  }

  async read(handle: string): Promise<AgentFile | undefined> {
    try {
      return JSON.parse(await readFile(this.fileOf(handle), 'utf8')) as AgentFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CliError('agent_file_unreadable', `cannot read ${this.fileOf(handle)}: ${(err as Error).message}`);
    }
  }

  /** The agent's file; refuses with how to register when there is none. */
  async load(handle: string): Promise<AgentFile> {
    const agent = await this.read(handle);
    if (!agent)
      throw new CliError(
        'agent_unknown',
        `no agent @${handle} in ${this.dir}: register it with "skill-market register ${handle}" (or set --home or SKILL_MARKET_HOME)`,
      );
    return agent;
  }

  async save(agent: AgentFile): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.fileOf(agent.handle);
    await writeFile(file, `${JSON.stringify(agent, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
    return file;
  }

  /** The agent's wallet, from its key file (a relative path is relative to the agents folder). */
  async wallet(agent: AgentFile): Promise<PrivateKeyAccount> {
    return privateKeyToAccount(await readKeyFile(this.dir, agent.keyFile));
  }

  /**
   * The key of a new agent `handle`: the one a registration that stopped half-way left in
   * `<handle>.key`, or a new one written there (0600). Returns the key and the file's name.
   */
  async newKey(handle: string): Promise<{ key: `0x${string}`; keyFile: string }> {
    const keyFile = `${handle}.key`;
    const path = join(this.dir, keyFile);
    try {
      return { key: await readKeyFile(this.dir, keyFile), keyFile };
    } catch (err) {
      if (!(err instanceof CliError) || !/ENOENT/.test(err.message)) throw err;
    }
    const key = generatePrivateKey();
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
    return { key, keyFile };
  }
}

/** A 0x-prefixed 32-byte private key read from `path`. */
export async function readKeyFile(cwd: string, path: string): Promise<`0x${string}`> {
  let key: string;
  try {
    key = (await readFile(resolve(cwd, path), 'utf8')).trim();
  } catch (err) {
    throw new CliError('wallet_unreadable', `cannot read the key file ${path}: ${(err as Error).message}`);
  }
  if (!KEY.test(key)) throw new CliError('wallet_invalid', `${path} must hold a 0x-prefixed 32-byte hex private key`);
  return key as `0x${string}`;
}
