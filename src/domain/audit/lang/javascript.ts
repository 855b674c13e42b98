import { parse } from '@babel/parser';
import type { Node } from '@babel/types';
import { type CodeFacts, emptyFacts, isCredentialPath, isSecretEnvName, type Located } from '../facts.js';
import { hostOf } from '../hosts.js';
import { MAX_NODES, ParseLimitError } from '../parsers.js';
import { shellQuote } from './quote.js';

/**
 * Facts about JavaScript and TypeScript from Babel's syntax tree. Calls are named by their dotted
 * callee with imports and requires resolved (`const { exec } = require('node:child_process')` →
 * child_process.exec), and string arguments are evaluated where they are literals or constants.
 */

const NETWORK =
  /^(fetch|node-fetch|cross-fetch|undici\.(fetch|request)|axios(\.create)?(\.(get|post|put|patch|delete|head|request))?|got(\.(get|post|put|patch|delete|stream))?|ky(\.(get|post|put|patch|delete))?|superagent\.(get|post|put)|needle|request|https?\.(request|get)|net\.(connect|createConnection)|tls\.connect|WebSocket|ws|navigator\.sendBeacon|XMLHttpRequest)$/;
const DECODERS = /^(atob|zlib\.(inflateSync|gunzipSync|inflateRawSync|brotliDecompressSync|unzipSync))$/;
const EVALUATORS =
  /^(eval|Function|vm\.(runInThisContext|runInNewContext|runInContext|compileFunction|Script)|setTimeout|setInterval|child_process\.(exec|execSync))$/;
const SHELL_STRING = /^(child_process\.(exec|execSync)|execa\.command|execaCommand|shelljs\.exec)$/;
const SHELL_ARGV = /^(child_process\.(spawn|spawnSync|execFile|execFileSync)|execa)$/;
const WRITE_FIRST =
  /(^|\.)(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|outputFile|outputFileSync)$/;
const WRITE_SECOND = /(^|\.)(copyFile|copyFileSync|rename|renameSync|symlink|symlinkSync|cp|cpSync)$/;
const SKIP_KEYS = new Set([
  'loc',
  'start',
  'end',
  'extra',
  'range',
  'leadingComments',
  'trailingComments',
  'innerComments',
  'comments',
  'tokens',
  'errors',
]);

type Taint = 'net' | 'decoded';
type AnyNode = Node & Record<string, unknown>;

interface Visit {
  node: AnyNode;
  parent: AnyNode | undefined;
}

/** Every node in source order with its parent, without recursion, at most MAX_NODES. */
function flatten(root: AnyNode): Visit[] {
  const out: Visit[] = [];
  const stack: Visit[] = [{ node: root, parent: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop() as Visit;
    out.push(visit);
    if (out.length > MAX_NODES) throw new ParseLimitError(`more than ${MAX_NODES} syntax nodes`);
    const children: AnyNode[] = [];
    for (const key of Object.keys(visit.node)) {
      if (SKIP_KEYS.has(key)) continue;
      const value = visit.node[key];
      if (Array.isArray(value)) {
        for (const item of value) if (isNode(item)) children.push(item);
      } else if (isNode(value)) children.push(value);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i] as AnyNode, parent: visit.node });
  }
  return out;
}

function isNode(value: unknown): value is AnyNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}
const at = (node: AnyNode): Located => ({ line: node.loc?.start.line ?? 1, column: node.loc?.start.column ?? 0 });

class JavaScriptReader {
  readonly facts = emptyFacts();
  private readonly aliases = new Map<string, string>();
  private readonly constants = new Map<string, string>();
  private readonly tainted = new Map<string, Taint>();
  private readonly parents = new Map<AnyNode, AnyNode | undefined>();
  constructor(private readonly nodes: Visit[]) {
    for (const { node, parent } of nodes) this.parents.set(node, parent);
  }

  read(): CodeFacts {
    for (const { node } of this.nodes) this.imports(node);
    for (let pass = 0; pass < 2; pass++) for (const { node } of this.nodes) this.assignment(node);
    for (const { node, parent } of this.nodes) {
      if (node.type === 'CallExpression' || node.type === 'NewExpression') this.call(node);
      else if (node.type === 'TaggedTemplateExpression') this.taggedTemplate(node);
      else if (node.type === 'MemberExpression' || node.type === 'Identifier') this.environment(node, parent);
      if (node.type === 'StringLiteral' || node.type === 'TemplateLiteral' || node.type === 'CallExpression')
        this.credentialPath(node);
    }
    return this.facts;
  }

  private imports(node: AnyNode): void {
    if (node.type === 'ImportDeclaration') {
      const module = node.source.value.replace(/^node:/, '');
      for (const s of node.specifiers) {
        if (s.type === 'ImportSpecifier') {
          const imported = s.imported.type === 'Identifier' ? s.imported.name : s.imported.value;
          this.aliases.set(s.local.name, imported === 'default' ? module : `${module}.${imported}`);
        } else this.aliases.set(s.local.name, module);
      }
    } else if (node.type === 'VariableDeclarator' && node.init) {
      const required = this.requiredModule(node.init as AnyNode);
      if (required === undefined) return;
      if (node.id.type === 'Identifier') this.aliases.set(node.id.name, required);
      else if (node.id.type === 'ObjectPattern')
        for (const p of node.id.properties)
          if (p.type === 'ObjectProperty' && p.key.type === 'Identifier' && p.value.type === 'Identifier')
            this.aliases.set(p.value.name, `${required}.${p.key.name}`);
    }
  }

  /** The module of `require('x')`, `await import('x')` or `require('x').y`. */
  private requiredModule(node: AnyNode): string | undefined {
    let inner = node;
    if (inner.type === 'AwaitExpression') inner = inner.argument as AnyNode;
    if (inner.type === 'MemberExpression' && !inner.computed && inner.property.type === 'Identifier') {
      const module = this.requiredModule(inner.object as AnyNode);
      return module ? `${module}.${inner.property.name}` : undefined;
    }
    if (inner.type !== 'CallExpression') return undefined;
    const isRequire = inner.callee.type === 'Identifier' && inner.callee.name === 'require';
    if (!isRequire && inner.callee.type !== 'Import') return undefined;
    const arg = inner.arguments[0];
    return arg?.type === 'StringLiteral' ? arg.value.replace(/^node:/, '') : undefined;
  }

  private assignment(node: AnyNode): void {
    let name: string | undefined;
    let value: AnyNode | undefined;
    if (node.type === 'VariableDeclarator' && node.id.type === 'Identifier' && node.init) {
      name = node.id.name;
      value = node.init as AnyNode;
    } else if (node.type === 'AssignmentExpression' && node.left.type === 'Identifier') {
      name = node.left.name;
      value = node.right as AnyNode;
    }
    if (!name || !value) return;
    const taint = this.taintOf(value);
    if (taint) this.tainted.set(name, taint);
    const literal = this.value(value);
    if (literal !== undefined) this.constants.set(name, literal);
    const callee =
      value.type === 'CallExpression' || value.type === 'NewExpression'
        ? this.callee(value.callee as AnyNode)
        : undefined;
    if (callee && !this.aliases.has(name) && /\./.test(callee)) this.aliases.set(name, callee);
    if (value.type === 'MemberExpression' && this.callee(value) === 'process.env')
      this.aliases.set(name, 'process.env');
  }

  callee(node: AnyNode | null | undefined): string | undefined {
    if (!node) return undefined;
    switch (node.type) {
      case 'Identifier':
        return this.aliases.get(node.name) ?? node.name;
      case 'MemberExpression':
      case 'OptionalMemberExpression': {
        const object = this.callee(node.object as AnyNode);
        const property = node.computed
          ? this.value(node.property as AnyNode)
          : (node.property as { name?: string }).name;
        if (!object || property === undefined) return undefined;
        return /^(globalThis|window|self|global)$/.test(object) ? property : `${object}.${property}`;
      }
      case 'CallExpression':
        return this.requiredModule(node) ?? this.callee(node.callee as AnyNode);
      case 'AwaitExpression':
      case 'TSNonNullExpression':
      case 'TSAsExpression':
        return this.callee((node.argument ?? node.expression) as AnyNode);
      default:
        return undefined;
    }
  }

  value(node: AnyNode | null | undefined): string | undefined {
    if (!node) return undefined;
    switch (node.type) {
      case 'StringLiteral':
        return node.value;
      case 'TemplateLiteral':
        return node.quasis
          .map((q, i) => {
            const expression = node.expressions[i] as AnyNode | undefined;
            return (q.value.cooked ?? q.value.raw) + (expression ? (this.value(expression) ?? '{…}') : '');
          })
          .join('');
      case 'BinaryExpression': {
        if (node.operator !== '+') return undefined;
        const left = this.value(node.left as AnyNode);
        const right = this.value(node.right as AnyNode);
        return left !== undefined && right !== undefined ? left + right : undefined;
      }
      case 'Identifier':
        return this.constants.get(node.name);
      case 'TSAsExpression':
      case 'TSNonNullExpression':
        return this.value(node.expression as AnyNode);
      case 'MemberExpression':
        return this.callee(node) === 'process.env.HOME' ? '~' : undefined;
      case 'CallExpression': {
        const callee = this.callee(node.callee as AnyNode) ?? '';
        if (/^os\.homedir$/.test(callee)) return '~';
        if (/^path\.(join|resolve|posix\.join)$/.test(callee)) {
          const parts = node.arguments.map((a) => this.value(a as AnyNode));
          return parts.every((p) => p !== undefined) ? parts.join('/') : undefined;
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }

  private taintOf(node: AnyNode): Taint | undefined {
    let taint: Taint | undefined;
    for (const { node: n } of flatten(node)) {
      if (n.type === 'CallExpression' || n.type === 'NewExpression') {
        const callee = this.callee(n.callee as AnyNode) ?? '';
        if (NETWORK.test(callee)) taint = 'net';
        else if (taint !== 'net' && (DECODERS.test(callee) || this.isBufferDecode(n, callee))) taint = 'decoded';
      } else if (n.type === 'Identifier') {
        const t = this.tainted.get(n.name);
        if (t === 'net' || (t && !taint)) taint = t;
      }
    }
    return taint;
  }

  private isBufferDecode(node: AnyNode, callee: string): boolean {
    if (callee !== 'Buffer.from') return false;
    const encoding = this.value((node.arguments as AnyNode[])[1]);
    return encoding !== undefined && /^(base64|base64url|hex)$/.test(encoding);
  }

  private call(node: AnyNode): void {
    const callee = this.callee(node.callee as AnyNode);
    if (!callee) return;
    const args = node.arguments as AnyNode[];
    const where = at(node);
    if (NETWORK.test(callee)) this.network(callee, args, where);
    else if (/\.open$/.test(callee) && /^(GET|POST|PUT|PATCH|DELETE)$/i.test(this.value(args[0]) ?? ''))
      this.network('XMLHttpRequest.open', args.slice(1), where);
    if (EVALUATORS.test(callee)) this.evaluation(callee, args, where);
    if (/\.then$/.test(callee)) this.promiseChain(node, args, where);
    if (callee === 'String.fromCharCode' || callee === 'String.fromCharCode.apply') this.charCodes(node, callee, where);
    if (SHELL_STRING.test(callee) && args[0]) {
      const text = this.value(args[0]);
      if (text !== undefined) this.facts.shellSnippets.push({ ...where, text });
    } else if (SHELL_ARGV.test(callee)) this.argv(args, where);
    const write = (path: string | undefined) => {
      if (path) this.facts.writes.push({ ...where, path, via: callee });
    };
    if (WRITE_FIRST.test(callee)) write(this.value(args[0]));
    else if (WRITE_SECOND.test(callee)) write(this.value(args[1]));
    if (/^keytar\.(getPassword|findCredentials)$/.test(callee))
      this.facts.secretReads.push({ ...where, kind: 'credential-file', what: 'the system keychain' });
  }

  private network(callee: string, args: AnyNode[], where: Located): void {
    const first = args[0];
    let host: string | undefined;
    if (first?.type === 'ObjectExpression') {
      for (const p of first.properties)
        if (
          p.type === 'ObjectProperty' &&
          p.key.type === 'Identifier' &&
          /^(host|hostname|url|baseURL)$/.test(p.key.name)
        )
          host = hostOf(this.value(p.value as AnyNode) ?? '') ?? host;
    } else {
      const value = this.value(first);
      host = value ? hostOf(value) : undefined;
    }
    this.facts.network.push({ ...where, host, via: callee });
  }

  private evaluation(callee: string, args: AnyNode[], where: Located): void {
    const taints = args.map((a) => (a.type.endsWith('FunctionExpression') ? undefined : this.taintOf(a)));
    const name = callee.split('.').pop();
    if (taints.includes('net'))
      this.facts.evalFetched.push({ ...where, detail: `${name}() runs text fetched from the network` });
    else if (taints.includes('decoded'))
      this.facts.execDecoded.push({ ...where, detail: `${name}() runs decoded data` });
  }

  /** fetch(u).then(r => r.text()).then(eval): a promise chain that starts with a download. */
  private promiseChain(node: AnyNode, args: AnyNode[], where: Located): void {
    const object = (node.callee as AnyNode).object as AnyNode | undefined;
    if (!object || this.taintOf(object) !== 'net') return;
    const handler = args[0];
    if (handler?.type === 'Identifier' && /^(eval|Function)$/.test(handler.name))
      this.facts.evalFetched.push({ ...where, detail: `a download is passed to ${handler.name}()` });
    else if (handler && /FunctionExpression$/.test(handler.type))
      for (const param of handler.params as AnyNode[])
        if (param.type === 'Identifier') this.tainted.set(param.name, 'net');
  }

  private charCodes(node: AnyNode, callee: string, where: Located): void {
    const args = node.arguments as AnyNode[];
    const spread = args.some((a) => a.type === 'SpreadElement');
    if (args.length >= 6 || spread || callee.endsWith('.apply') || this.insideMapCallback(node))
      this.facts.charCodes.push({ ...where, detail: 'String.fromCharCode spells a string from character codes' });
  }

  private insideMapCallback(node: AnyNode): boolean {
    let current = this.parents.get(node);
    for (let depth = 0; current && depth < 6; depth++, current = this.parents.get(current))
      if (
        current.type === 'CallExpression' &&
        /\.(map|reduce|replace|forEach)$/.test(this.callee(current.callee as AnyNode) ?? '')
      )
        return true;
    return false;
  }

  private argv(args: AnyNode[], where: Located): void {
    const command = this.value(args[0]);
    const list = args[1]?.type === 'ArrayExpression' ? (args[1].elements as AnyNode[]) : [];
    const values = list.map((e) => this.value(e));
    if (command === undefined || values.some((v) => v === undefined)) return;
    this.facts.shellSnippets.push({ ...where, text: [command, ...(values as string[])].map(shellQuote).join(' ') });
  }

  private taggedTemplate(node: AnyNode): void {
    // zx and Bun run `$\`…\`` as a shell command line.
    const tag = node.tag as AnyNode;
    if (tag.type !== 'Identifier' || tag.name !== '$') return;
    const text = this.value(node.quasi as AnyNode);
    if (text !== undefined) this.facts.shellSnippets.push({ ...at(node), text });
  }

  /** process.env: one variable by name, or the whole environment serialised, spread or iterated. */
  private environment(node: AnyNode, parent: AnyNode | undefined): void {
    const name = this.callee(node);
    if (!name?.startsWith('process.env')) return;
    if (parent?.type === 'MemberExpression' && parent.object === node) return; // seen at the longer name
    const where = at(node);
    if (name !== 'process.env') {
      const variable = name.slice('process.env.'.length);
      if (isSecretEnvName(variable)) this.facts.secretReads.push({ ...where, kind: 'env-var', what: variable });
      return;
    }
    if (parent?.type === 'VariableDeclarator' && parent.id.type === 'ObjectPattern') {
      for (const p of parent.id.properties)
        if (p.type === 'ObjectProperty' && p.key.type === 'Identifier' && isSecretEnvName(p.key.name))
          this.facts.secretReads.push({ ...where, kind: 'env-var', what: p.key.name });
      return;
    }
    if (this.isChildEnvironment(node, parent)) return;
    const dumped =
      parent?.type === 'CallExpression' ||
      parent?.type === 'SpreadElement' ||
      parent?.type === 'ForInStatement' ||
      parent?.type === 'ForOfStatement';
    if (dumped) this.facts.secretReads.push({ ...where, kind: 'env-dump', what: 'process.env' });
  }

  /** `{ env: process.env }` or `{ env: { ...process.env } }`: the environment handed to a child process. */
  private isChildEnvironment(node: AnyNode, parent: AnyNode | undefined): boolean {
    let current: AnyNode | undefined = parent;
    let child: AnyNode = node;
    for (let depth = 0; current && depth < 3; depth++) {
      if (current.type === 'ObjectProperty' && current.value === child)
        return current.key.type === 'Identifier' && current.key.name === 'env';
      child = current;
      current = this.parents.get(current);
    }
    return false;
  }

  private credentialPath(node: AnyNode): void {
    if (node.type === 'CallExpression' && !/^path\./.test(this.callee(node.callee as AnyNode) ?? '')) return;
    const value = this.value(node);
    if (value && isCredentialPath(value))
      this.facts.secretReads.push({ ...at(node), kind: 'credential-file', what: value });
  }
}

/** Parses JavaScript or TypeScript and reads its facts; Babel's recovered errors are the problem. */
export function javascriptFacts(text: string, typescript: boolean): { facts: CodeFacts; problem?: string } {
  const ast = parse(text, {
    sourceType: 'unambiguous',
    errorRecovery: true,
    allowReturnOutsideFunction: true,
    allowAwaitOutsideFunction: true,
    allowImportExportEverywhere: true,
    allowUndeclaredExports: true,
    plugins: typescript ? ['typescript'] : ['jsx'],
  });
  const problem = ast.errors?.[0]
    ? `syntax error: ${ast.errors[0].reasonCode ?? 'invalid syntax'} at line ${ast.errors[0].loc.line}`
    : undefined;
  const facts = new JavaScriptReader(flatten(ast.program as unknown as AnyNode)).read();
  return { facts, problem };
}
