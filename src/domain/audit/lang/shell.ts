import { type CodeFacts, emptyFacts, isCredentialPath, isSecretEnvName } from '../facts.js';
import { hostOf } from '../hosts.js';
import { eachNode, type SyntaxNode } from '../parsers.js';

/**
 * Facts about shell code from its tree-sitter syntax tree: pipelines that feed a download or a
 * decoded blob to an interpreter, eval of fetched text, network commands and their hosts, secret
 * reads, and files written through redirects and file commands.
 */

const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'aria2c', 'http', 'https', 'lwp-request', 'GET', 'xh']);
const NETWORK = new Set([
  ...DOWNLOADERS,
  'nc',
  'ncat',
  'netcat',
  'socat',
  'telnet',
  'ssh',
  'scp',
  'sftp',
  'rsync',
  'ftp',
]);
const INTERPRETERS = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'python',
  'python2',
  'python3',
  'node',
  'perl',
  'ruby',
  'php',
  'pwsh',
  'powershell',
  'deno',
  'bun',
  'osascript',
]);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish']);
const WRAPPERS = new Set(['sudo', 'doas', 'env', 'exec', 'nohup', 'time', 'command', 'builtin', 'nice']);
const COPIERS = new Set(['cp', 'mv', 'install', 'ln', 'rsync']);

type Taint = 'net' | 'decoded';

/** A command after its wrappers (sudo, env…) are removed: its base name and argument values. */
interface Command {
  node: SyntaxNode;
  name: string;
  args: string[];
  argNodes: SyntaxNode[];
}

class ShellReader {
  readonly facts = emptyFacts();
  private readonly constants = new Map<string, string>();
  private readonly tainted = new Map<string, Taint>();

  constructor(private readonly root: SyntaxNode) {}

  read(): CodeFacts {
    // Assignments first, so a later command sees what a variable holds.
    eachNode(this.root, (node) => {
      if (node.type === 'variable_assignment') this.noteAssignment(node);
    });
    eachNode(this.root, (node) => this.visit(node));
    return this.facts;
  }

  private visit(node: SyntaxNode): void {
    switch (node.type) {
      case 'command':
        this.command(node);
        break;
      case 'pipeline':
        this.pipeline(node);
        break;
      case 'file_redirect':
        this.redirect(node);
        break;
      case 'simple_expansion':
      case 'expansion':
        this.expansion(node);
        break;
    }
  }

  private noteAssignment(node: SyntaxNode): void {
    const name = node.childForFieldName('name')?.text;
    const value = node.childForFieldName('value');
    if (!name || !value) return;
    const taint = this.taintOf(value);
    if (taint) this.tainted.set(name, taint);
    else if (!hasDescendant(value, ['command_substitution', 'simple_expansion', 'expansion']))
      this.constants.set(name, this.value(value));
  }

  /** What running a node's command substitutions yields: a download, decoded data, or neither. */
  private taintOf(node: SyntaxNode): Taint | undefined {
    let taint: Taint | undefined;
    eachNode(node, (n) => {
      if (n.type === 'command') {
        const cmd = this.resolve(n);
        if (cmd && DOWNLOADERS.has(cmd.name)) taint = 'net';
        else if (cmd && isDecoder(cmd) && taint !== 'net') taint = 'decoded';
      } else if (n.type === 'simple_expansion' || n.type === 'expansion') {
        const t = this.tainted.get(variableName(n) ?? '');
        if (t && taint !== 'net') taint = t;
      }
    });
    return taint;
  }

  /** The literal value of a word, with known variables substituted and $HOME spelled "~". */
  value(node: SyntaxNode): string {
    switch (node.type) {
      case 'word':
        return node.text.replace(/\\(.)/g, '$1');
      case 'raw_string':
        return node.text.slice(1, -1);
      case 'ansi_c_string':
        return node.text.slice(2, -1);
      case 'simple_expansion':
      case 'expansion': {
        const name = variableName(node) ?? '';
        if (name === 'HOME') return '~';
        return this.constants.get(name) ?? node.text;
      }
      case 'string':
      case 'concatenation': {
        let out = '';
        for (const child of node.children) if (child && child.type !== '"') out += this.value(child);
        return out;
      }
      default:
        return node.text;
    }
  }

  /** The command a `command` node runs once wrappers like sudo and env are peeled off. */
  resolve(node: SyntaxNode): Command | undefined {
    const nameNode = node.childForFieldName('name');
    if (!nameNode) return undefined;
    const words: SyntaxNode[] = [nameNode, ...node.childrenForFieldName('argument').filter((n) => n !== null)];
    let i = 0;
    const base = (w: SyntaxNode) => (this.value(w).split('/').pop() ?? '').trim();
    while (i < words.length - 1 && WRAPPERS.has(base(words[i] as SyntaxNode))) {
      i++;
      // Skip the wrapper's options and env's NAME=value pairs to reach the real command.
      while (i < words.length - 1 && /^(-|\w+=)/.test(this.value(words[i] as SyntaxNode))) i++;
    }
    const argNodes = words.slice(i + 1);
    return { node, name: base(words[i] as SyntaxNode), args: argNodes.map((w) => this.value(w)), argNodes };
  }

  private command(node: SyntaxNode): void {
    const cmd = this.resolve(node);
    if (!cmd) return;
    const line = node.startPosition.row + 1;
    const column = node.startPosition.column;
    const at = { line, column };
    if (NETWORK.has(cmd.name)) this.network(cmd, at);
    this.dynamicExecution(cmd, at);
    this.secretCommand(cmd, at);
    this.fileCommand(cmd, at);
    for (const arg of cmd.args)
      if (isCredentialPath(arg)) this.facts.secretReads.push({ ...at, kind: 'credential-file', what: arg });
  }

  private network(cmd: Command, at: { line: number; column: number }): void {
    const hosts = new Set<string>();
    const bareHostAllowed = !DOWNLOADERS.has(cmd.name);
    for (const arg of cmd.args) {
      if (arg.startsWith('-')) continue;
      const host = /^[a-z]+:\/\//i.test(arg) || bareHostAllowed ? hostOf(arg) : undefined;
      if (host) hosts.add(host);
    }
    if (hosts.size === 0) this.facts.network.push({ ...at, via: cmd.name });
    for (const host of hosts) this.facts.network.push({ ...at, host, via: cmd.name });
  }

  /** eval, sh -c and source over downloads or decoded data; -c strings are audited as shell too. */
  private dynamicExecution(cmd: Command, at: { line: number; column: number }): void {
    const isEval = cmd.name === 'eval';
    const isSource = cmd.name === 'source' || cmd.name === '.';
    const dashC = cmd.args.indexOf('-c');
    const code = isEval || isSource ? cmd.argNodes : dashC >= 0 ? cmd.argNodes.slice(dashC + 1, dashC + 2) : [];
    if (INTERPRETERS.has(cmd.name) || isSource)
      for (const arg of cmd.argNodes) if (arg.type === 'process_substitution') this.runsSubstitution(arg, at, cmd.name);
    if (!isEval && !isSource && !INTERPRETERS.has(cmd.name)) return;
    for (const arg of code) {
      const taint = this.taintOf(arg);
      const shown = isEval ? 'eval' : `${cmd.name} -c`;
      if (taint === 'net' && isEval) this.facts.evalFetched.push({ ...at, detail: `${shown} runs downloaded text` });
      else if (taint === 'net') this.facts.pipeToShell.push({ ...at, detail: `${shown} runs downloaded text` });
      else if (taint === 'decoded') this.facts.execDecoded.push({ ...at, detail: `${shown} runs decoded data` });
    }
    if (dashC >= 0 && SHELLS.has(cmd.name)) {
      const script = cmd.argNodes[dashC + 1];
      if (script && (script.type === 'raw_string' || script.type === 'string'))
        this.facts.shellSnippets.push({ ...at, text: this.value(script) });
    }
  }

  private runsSubstitution(node: SyntaxNode, at: { line: number; column: number }, runner: string): void {
    const taint = this.taintOf(node);
    if (taint === 'net') this.facts.pipeToShell.push({ ...at, detail: `${runner} <(…) runs downloaded text` });
    else if (taint === 'decoded') this.facts.execDecoded.push({ ...at, detail: `${runner} <(…) runs decoded data` });
  }

  private secretCommand(cmd: Command, at: { line: number; column: number }): void {
    const positional = cmd.args.filter((a) => !a.startsWith('-'));
    const dumpsEnv =
      ((cmd.name === 'env' || cmd.name === 'printenv') && positional.length === 0) ||
      (cmd.name === 'set' && cmd.args.length === 0) ||
      ((cmd.name === 'export' || cmd.name === 'declare') && cmd.args.includes(cmd.name === 'export' ? '-p' : '-x')) ||
      (cmd.name === 'compgen' && cmd.args.includes('-e'));
    if (dumpsEnv) this.facts.secretReads.push({ ...at, kind: 'env-dump', what: cmd.name });
    const sub = positional[0] ?? '';
    const readsStore =
      (cmd.name === 'security' && /^(find-(generic|internet)-password|dump-keychain)$/.test(sub)) ||
      (cmd.name === 'gh' && sub === 'auth' && positional[1] === 'token') ||
      (cmd.name === 'secret-tool' && sub === 'lookup');
    if (readsStore) this.facts.secretReads.push({ ...at, kind: 'credential-file', what: `${cmd.name} ${sub}` });
  }

  private fileCommand(cmd: Command, at: { line: number; column: number }): void {
    const positional = cmd.args.filter((a) => !a.startsWith('-'));
    const write = (path: string) => this.facts.writes.push({ ...at, path, via: cmd.name });
    if (cmd.name === 'tee') positional.forEach(write);
    else if (COPIERS.has(cmd.name) && positional.length >= 2) write(positional[positional.length - 1] as string);
    else if ((cmd.name === 'sed' || cmd.name === 'perl') && cmd.args.some((a) => /^-[a-z]*i/.test(a)))
      write(positional[positional.length - 1] ?? '');
    else if (cmd.name === 'dd') for (const a of cmd.args) if (a.startsWith('of=')) write(a.slice(3));
    if (cmd.name === 'crontab' && !cmd.args.includes('-l'))
      this.facts.persistence.push({ ...at, detail: 'crontab installs a scheduled job' });
    if (cmd.name === 'systemctl' && positional[0] === 'enable')
      this.facts.persistence.push({ ...at, detail: 'systemctl enable installs a service that starts again' });
    if (cmd.name === 'launchctl' && /^(load|bootstrap|enable)$/.test(positional[0] ?? ''))
      this.facts.persistence.push({ ...at, detail: `launchctl ${positional[0]} installs a launch agent` });
  }

  /** `curl … | sh`: a stage that downloads or decodes, followed by an interpreter reading stdin. */
  private pipeline(node: SyntaxNode): void {
    let source: Taint | undefined;
    for (const stage of node.namedChildren) {
      if (!stage) continue;
      const cmd = this.stageCommand(stage);
      if (source && cmd && readsProgramFromStdin(cmd)) {
        const at = { line: stage.startPosition.row + 1, column: stage.startPosition.column };
        const detail = `${source === 'net' ? 'a download' : 'decoded data'} is piped into ${cmd.name}`;
        (source === 'net' ? this.facts.pipeToShell : this.facts.execDecoded).push({ ...at, detail });
      }
      const taint = this.taintOf(stage);
      if (taint === 'net' || (taint === 'decoded' && source !== 'net')) source = taint;
    }
  }

  private stageCommand(stage: SyntaxNode): Command | undefined {
    const body = stage.type === 'redirected_statement' ? stage.childForFieldName('body') : stage;
    return body?.type === 'command' ? this.resolve(body) : undefined;
  }

  private redirect(node: SyntaxNode): void {
    const destination = node.childForFieldName('destination');
    if (!destination) return;
    const op = node.children.find((c) => c && !c.isNamed)?.type ?? '';
    const path = this.value(destination);
    const at = { line: node.startPosition.row + 1, column: node.startPosition.column };
    const tcp = /^\/dev\/(tcp|udp)\/([^/]+)\//.exec(path);
    if (tcp) this.facts.network.push({ ...at, host: (tcp[2] ?? '').toLowerCase(), via: `/dev/${tcp[1]}` });
    else if (/^(>|>>|&>|&>>|>\|)$/.test(op)) this.facts.writes.push({ ...at, path, via: op });
    else if (isCredentialPath(path)) this.facts.secretReads.push({ ...at, kind: 'credential-file', what: path });
    if (destination.type === 'process_substitution' && op === '<') {
      const parent = node.parent?.childForFieldName('body');
      const cmd = parent?.type === 'command' ? this.resolve(parent) : undefined;
      if (cmd && INTERPRETERS.has(cmd.name)) this.runsSubstitution(destination, at, cmd.name);
    }
  }

  private expansion(node: SyntaxNode): void {
    const name = variableName(node);
    if (name && isSecretEnvName(name) && !this.constants.has(name))
      this.facts.secretReads.push({
        line: node.startPosition.row + 1,
        column: node.startPosition.column,
        kind: 'env-var',
        what: name,
      });
  }
}

function variableName(node: SyntaxNode): string | undefined {
  for (const child of node.namedChildren)
    if (child && (child.type === 'variable_name' || child.type === 'special_variable_name')) return child.text;
  return undefined;
}

function hasDescendant(node: SyntaxNode, types: string[]): boolean {
  return node.descendantsOfType(types).length > 0;
}

function isDecoder(cmd: Command): boolean {
  const decodes = cmd.args.some((a) => /^(-d|-D|--decode|-r)$/.test(a));
  if ((cmd.name === 'base64' || cmd.name === 'base32' || cmd.name === 'basenc') && decodes) return true;
  if (cmd.name === 'xxd' && cmd.args.some((a) => a.startsWith('-r'))) return true;
  if (cmd.name === 'openssl' && cmd.args.includes('-d')) return true;
  return cmd.name === 'uudecode';
}

/** An interpreter that takes its program from standard input: no script argument, or "-" / "-s". */
function readsProgramFromStdin(cmd: Command): boolean {
  if (!INTERPRETERS.has(cmd.name)) return false;
  if (cmd.args.some((a) => a === '-c' || a === '-e' || a === '--eval' || a === '-m')) return false;
  const script = cmd.args.find((a) => !a.startsWith('-') || a === '-');
  return script === undefined || script === '-' || cmd.args.includes('-s');
}

/** Reads the facts of a parsed shell program. */
export function shellFacts(root: SyntaxNode): CodeFacts {
  return new ShellReader(root).read();
}
