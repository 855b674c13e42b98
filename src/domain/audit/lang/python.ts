import { type CodeFacts, emptyFacts, isCredentialPath, isSecretEnvName, type Located } from '../facts.js';
import { hostOf } from '../hosts.js';
import { eachNode, type SyntaxNode } from '../parsers.js';
import { shellQuote } from './quote.js';

/**
 * Facts about Python code from its tree-sitter syntax tree. Calls are named by their dotted callee
 * with import aliases resolved (`from urllib.request import urlopen as get` → urllib.request.urlopen),
 * and string arguments are evaluated where they are literals, constants, joins or f-string prefixes.
 */

const NETWORK =
  /^((requests|httpx)(\.(Session|Client|AsyncClient))?\.(get|post|put|patch|delete|head|options|request|stream)|urllib\.request\.(urlopen|Request|urlretrieve)|urllib2\.urlopen|http\.client\.HTTPS?Connection|socket\.create_connection|aiohttp\.ClientSession\.(get|post|put|patch|delete|request)|urllib3(\.PoolManager)?\.request|smtplib\.SMTP(_SSL)?|ftplib\.FTP|websocket\.create_connection|websockets\.connect)$/;
const DECODERS =
  /^(base64\.(b64|b32|b16|a85|b85|urlsafe_b64)decode|codecs\.decode|bytes\.fromhex|binascii\.(unhexlify|a2b_base64|a2b_hex)|(zlib|gzip|bz2|lzma)\.decompress|marshal\.loads)$/;
const EVALUATORS = /^(eval|exec|compile|builtins\.(eval|exec|compile))$/;
const SHELL_RUNNERS =
  /^(os\.(system|popen)|subprocess\.(run|call|check_call|check_output|Popen|getoutput|getstatusoutput))$/;
const WRITE_TWO = /^(shutil\.(copy|copy2|copyfile|copytree|move)|os\.(rename|replace|symlink|link))$/;

type Taint = 'net' | 'decoded';

const lineOf = (node: SyntaxNode): Located => ({ line: node.startPosition.row + 1, column: node.startPosition.column });

class PythonReader {
  readonly facts = emptyFacts();
  private readonly aliases = new Map<string, string>();
  private readonly constants = new Map<string, string>();
  private readonly tainted = new Map<string, Taint>();
  private readonly chrPerLine = new Map<number, number>();

  constructor(private readonly root: SyntaxNode) {}

  read(): CodeFacts {
    eachNode(this.root, (node) => {
      if (node.type === 'import_statement' || node.type === 'import_from_statement') this.importStatement(node);
    });
    // Twice, so a variable assigned in a loop body from another one assigned later is still seen.
    for (let pass = 0; pass < 2; pass++)
      eachNode(this.root, (node) => {
        if (node.type === 'assignment') this.assignment(node);
      });
    eachNode(this.root, (node) => {
      if (node.type === 'call') this.call(node);
      else if (node.type === 'string') this.stringLiteral(node);
      else if (node.type === 'attribute' || node.type === 'identifier') this.environ(node);
    });
    for (const [line, count] of this.chrPerLine)
      if (count >= 6) this.facts.charCodes.push({ line, detail: `${count} chr() calls spell a string` });
    return this.facts;
  }

  private importStatement(node: SyntaxNode): void {
    const module = node.childForFieldName('module_name')?.text;
    for (const name of node.childrenForFieldName('name')) {
      if (!name) continue;
      const dotted = name.type === 'aliased_import' ? (name.childForFieldName('name')?.text ?? '') : name.text;
      const alias = name.type === 'aliased_import' ? name.childForFieldName('alias')?.text : undefined;
      const full = module ? `${module}.${dotted}` : dotted;
      if (alias) this.aliases.set(alias, full);
      else if (module) this.aliases.set(dotted, full);
    }
  }

  private assignment(node: SyntaxNode): void {
    const left = node.childForFieldName('left');
    const right = node.childForFieldName('right');
    if (left?.type !== 'identifier' || !right) return;
    const taint = this.taintOf(right);
    if (taint) this.tainted.set(left.text, taint);
    const value = this.value(right);
    if (value !== undefined) this.constants.set(left.text, value);
    // `s = requests.Session()`: calls on s are calls on the session type.
    if (right.type === 'call') {
      const callee = this.callee(right.childForFieldName('function'));
      if (callee?.includes('.')) this.aliases.set(left.text, callee);
    }
  }

  /** The dotted name of a callee, aliases resolved; calls in the chain are dropped (Session().get). */
  callee(node: SyntaxNode | null): string | undefined {
    if (!node) return undefined;
    if (node.type === 'identifier') return this.aliases.get(node.text) ?? node.text;
    if (node.type === 'attribute') {
      const object = this.callee(node.childForFieldName('object'));
      const attribute = node.childForFieldName('attribute')?.text;
      return object && attribute ? `${object}.${attribute}` : undefined;
    }
    if (node.type === 'call') return this.callee(node.childForFieldName('function'));
    if (node.type === 'parenthesized_expression') return '(…)';
    if (node.type === 'string') return 'str';
    return undefined;
  }

  /** A string's value where it can be known statically; "~" stands for the home directory. */
  value(node: SyntaxNode | null | undefined): string | undefined {
    if (!node) return undefined;
    switch (node.type) {
      case 'string': {
        let out = '';
        for (const part of node.namedChildren)
          if (part?.type === 'string_content' || part?.type === 'escape_sequence') out += part.text;
          else if (part?.type === 'interpolation') out += '{…}';
        return out;
      }
      case 'concatenated_string':
        return node.namedChildren.map((c) => this.value(c) ?? '').join('');
      case 'identifier':
        return this.constants.get(node.text);
      case 'parenthesized_expression':
        return this.value(node.namedChildren[0]);
      case 'binary_operator': {
        const op = node.childForFieldName('operator')?.type;
        const left = this.value(node.childForFieldName('left'));
        const right = this.value(node.childForFieldName('right'));
        if (left === undefined || right === undefined) return undefined;
        return op === '/' ? `${left}/${right}` : op === '+' ? left + right : undefined;
      }
      case 'call':
        return this.callValue(node);
      case 'subscript':
        return this.callee(node.childForFieldName('value')) === 'os.environ' &&
          this.value(node.childForFieldName('subscript')) === 'HOME'
          ? '~'
          : undefined;
      default:
        return undefined;
    }
  }

  private callValue(node: SyntaxNode): string | undefined {
    const callee = this.callee(node.childForFieldName('function')) ?? '';
    const args = this.positional(node);
    if (/^(pathlib\.)?Path\.home$|^os\.path\.expanduser$/.test(callee) && args.length === 0) return '~';
    if (/^os\.(getenv|environ\.get)$/.test(callee)) return this.value(args[0]) === 'HOME' ? '~' : undefined;
    if (/^(os\.path\.(join)|(pathlib\.)?(Pure)?Path|posixpath\.join)$/.test(callee)) {
      const parts = args.map((a) => this.value(a));
      return parts.every((p) => p !== undefined) ? parts.join('/') : undefined;
    }
    if (/^(os\.path\.(expanduser|abspath|realpath|normpath)|str)$/.test(callee)) return this.value(args[0]);
    return undefined;
  }

  private positional(call: SyntaxNode): SyntaxNode[] {
    const args = call.childForFieldName('arguments');
    // f(x for x in y): a lone generator is the argument list itself.
    if (args?.type === 'generator_expression') return [args];
    return (args?.namedChildren ?? []).filter(
      (a): a is SyntaxNode => a !== null && a.type !== 'keyword_argument' && a.type !== 'comment',
    );
  }

  private keyword(call: SyntaxNode, name: string): SyntaxNode | undefined {
    const args = call.childForFieldName('arguments');
    for (const a of args?.namedChildren ?? [])
      if (a?.type === 'keyword_argument' && a.childForFieldName('name')?.text === name)
        return a.childForFieldName('value') ?? undefined;
    return undefined;
  }

  /** Whether evaluating a node involves a download or decoded data. */
  private taintOf(node: SyntaxNode): Taint | undefined {
    let taint: Taint | undefined;
    eachNode(node, (n) => {
      if (n.type === 'call') {
        const callee = this.callee(n.childForFieldName('function')) ?? '';
        if (NETWORK.test(callee)) taint = 'net';
        else if (DECODERS.test(callee) && taint !== 'net') taint = 'decoded';
      } else if (n.type === 'identifier') {
        const t = this.tainted.get(n.text);
        if (t === 'net' || (t && !taint)) taint = t;
      }
    });
    return taint;
  }

  private call(node: SyntaxNode): void {
    const callee = this.callee(node.childForFieldName('function'));
    if (!callee) return;
    const at = lineOf(node);
    const args = this.positional(node);
    if (NETWORK.test(callee) || (callee.endsWith('.connect') && args[0]?.type === 'tuple'))
      this.network(callee, args, at);
    if (EVALUATORS.test(callee) || SHELL_RUNNERS.test(callee)) this.evaluation(callee, args, at);
    if (SHELL_RUNNERS.test(callee)) this.shellSnippet(args[0], at);
    if (callee === 'chr') this.chrPerLine.set(at.line, (this.chrPerLine.get(at.line) ?? 0) + 1);
    if (callee.endsWith('.join') && args[0] && /generator_expression|list_comprehension/.test(args[0].type))
      if (args[0].descendantsOfType('call').some((c) => c && this.callee(c.childForFieldName('function')) === 'chr'))
        this.facts.charCodes.push({ ...at, detail: 'a string is joined from chr() of computed codes' });
    if (/^(os\.getenv|os\.environ\.(get|pop|setdefault))$/.test(callee)) this.envVar(this.value(args[0]), at);
    if (/^keyring\.get_(password|credential)$/.test(callee))
      this.facts.secretReads.push({ ...at, kind: 'credential-file', what: 'the system keyring' });
    this.writes(node, callee, args, at);
  }

  private network(callee: string, args: SyntaxNode[], at: Located): void {
    const first = args[0]?.type === 'tuple' ? args[0].namedChildren[0] : args[0];
    const value = this.value(first);
    this.facts.network.push({ ...at, host: value ? hostOf(value) : undefined, via: callee });
  }

  private evaluation(callee: string, args: SyntaxNode[], at: Located): void {
    const code = args[0];
    if (!code) return;
    const taint = this.taintOf(code);
    if (taint === 'net')
      this.facts.evalFetched.push({ ...at, detail: `${callee}() runs text fetched from the network` });
    else if (taint === 'decoded') this.facts.execDecoded.push({ ...at, detail: `${callee}() runs decoded data` });
  }

  private shellSnippet(arg: SyntaxNode | undefined, at: Located): void {
    if (!arg) return;
    if (arg.type === 'list') {
      const parts = arg.namedChildren.map((c) => this.value(c));
      if (parts.every((p) => p !== undefined))
        this.facts.shellSnippets.push({ ...at, text: parts.map(shellQuote).join(' ') });
      return;
    }
    const text = this.value(arg);
    if (text !== undefined) this.facts.shellSnippets.push({ ...at, text });
  }

  private writes(node: SyntaxNode, callee: string, args: SyntaxNode[], at: Located): void {
    const write = (path: string | undefined, via: string) => {
      if (path) this.facts.writes.push({ ...at, path, via });
    };
    if (callee === 'open' || callee === 'io.open' || callee === 'codecs.open') {
      const mode = this.value(args[1] ?? this.keyword(node, 'mode')) ?? 'r';
      if (/[wax+]/.test(mode)) write(this.value(args[0]), 'open()');
    } else if (/\.(write_text|write_bytes|open)$/.test(callee)) {
      const target = node.childForFieldName('function')?.childForFieldName('object');
      const mode = callee.endsWith('.open') ? (this.value(args[0]) ?? 'r') : 'w';
      if (/[wax+]/.test(mode)) write(this.value(target), callee.split('.').pop() ?? '');
    } else if (WRITE_TWO.test(callee)) write(this.value(args[1]), callee);
  }

  private envVar(name: string | undefined, at: Located): void {
    if (name && isSecretEnvName(name)) this.facts.secretReads.push({ ...at, kind: 'env-var', what: name });
  }

  private stringLiteral(node: SyntaxNode): void {
    const value = this.value(node);
    if (value && isCredentialPath(value))
      this.facts.secretReads.push({ ...lineOf(node), kind: 'credential-file', what: value });
  }

  /** os.environ: one variable by name, or the whole environment serialised or iterated. */
  private environ(node: SyntaxNode): void {
    const parent = node.parent;
    if (!parent || this.callee(node) !== 'os.environ') return;
    // `os.environ` inside a longer dotted name is seen once, at its own node.
    if (parent.type === 'attribute' && parent.childForFieldName('object')?.id !== node.id) return;
    const at = lineOf(node);
    if (parent.type === 'subscript' && parent.childForFieldName('value')?.id === node.id) {
      this.envVar(this.value(parent.childForFieldName('subscript')), at);
      return;
    }
    if (parent.type === 'attribute') {
      const method = parent.childForFieldName('attribute')?.text ?? '';
      if (/^(items|keys|values)$/.test(method))
        this.facts.secretReads.push({ ...at, kind: 'env-dump', what: `os.environ.${method}()` });
      return;
    }
    const iterated = parent.type === 'for_statement' || parent.type === 'for_in_clause';
    const callee = this.callee(parent.parent?.childForFieldName('function') ?? null) ?? '';
    // A copy of the environment handed to a child process (`env=dict(os.environ, X='1')`) stays
    // on the machine; a copy put anywhere else (serialised, sent) is the whole environment.
    const childEnv =
      callee === 'dict' && parent.parent?.parent?.type === 'keyword_argument'
        ? parent.parent.parent.childForFieldName('name')?.text === 'env'
        : false;
    const passed = parent.type === 'argument_list' && !childEnv && !/^(subprocess\..*|os\.exec.*)$/.test(callee);
    if (iterated || passed) this.facts.secretReads.push({ ...at, kind: 'env-dump', what: 'os.environ' });
  }
}

/** Reads the facts of a parsed Python module. */
export function pythonFacts(root: SyntaxNode): CodeFacts {
  return new PythonReader(root).read();
}
