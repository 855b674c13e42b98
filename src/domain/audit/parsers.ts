import { createRequire } from 'node:module';
import treeSitter from '@vscode/tree-sitter-wasm';
import type { Language, Node as SyntaxNode, Parser } from '@vscode/tree-sitter-wasm';

/**
 * The syntax parsers the audit uses, loaded once per process: tree-sitter (WebAssembly, no native
 * build) for shell and Python; Babel for JavaScript and TypeScript (see lang/javascript.ts).
 * Loading the grammars reads files shipped in node_modules; auditing itself does no I/O.
 */

export type { SyntaxNode };

/** Code longer than this is not parsed (text checks still run): parse time grows with size. */
export const MAX_PARSED_CHARS = 128 * 1024;
/** Brackets nested deeper than this are refused before parsing: parsers slow down or overflow. */
export const MAX_NESTING = 500;
/** A tree with more nodes than this is abandoned as unreadable rather than walked. */
export const MAX_NODES = 200_000;

export class ParseLimitError extends Error {}

/** The deepest nesting of (, [ and { in a text, counted without parsing (strings included). */
export function bracketDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 40 || c === 91 || c === 123) deepest = Math.max(deepest, ++depth);
    else if ((c === 41 || c === 93 || c === 125) && depth > 0) depth--;
  }
  return deepest;
}

interface TreeSitterParsers {
  bash: Parser;
  python: Parser;
}

let loading: Promise<TreeSitterParsers> | undefined;

async function load(): Promise<TreeSitterParsers> {
  const require = createRequire(import.meta.url);
  await treeSitter.Parser.init();
  const grammar = (name: string): Promise<Language> =>
    treeSitter.Language.load(require.resolve(`@vscode/tree-sitter-wasm/wasm/tree-sitter-${name}.wasm`));
  const [bashLanguage, pythonLanguage] = await Promise.all([grammar('bash'), grammar('python')]);
  const bash = new treeSitter.Parser();
  bash.setLanguage(bashLanguage);
  const python = new treeSitter.Parser();
  python.setLanguage(pythonLanguage);
  return { bash, python };
}

/** The tree-sitter parsers, loaded on first use. */
export function treeSitterParsers(): Promise<TreeSitterParsers> {
  loading ??= load();
  return loading;
}

/**
 * Parses with tree-sitter and hands the root to `use`, freeing the tree afterwards (its memory lives
 * in WebAssembly, outside the garbage collector). Returns the syntax errors' first line, if any.
 */
export function withTree<T>(parser: Parser, text: string, use: (root: SyntaxNode) => T): T {
  const tree = parser.parse(text);
  if (!tree) throw new ParseLimitError('the parser gave up');
  try {
    return use(tree.rootNode);
  } finally {
    tree.delete();
  }
}

/** The first syntax error of a tree-sitter tree as "line N: …", or undefined when it parsed cleanly. */
export function firstSyntaxError(root: SyntaxNode): string | undefined {
  if (!root.hasError) return undefined;
  const stack: SyntaxNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as SyntaxNode;
    if (node.isError || node.isMissing)
      return `syntax error at line ${node.startPosition.row + 1}${node.isMissing ? ` (missing ${node.type})` : ''}`;
    if (!node.hasError) continue;
    for (let i = node.childCount - 1; i >= 0; i--) {
      const child = node.child(i);
      if (child) stack.push(child);
    }
  }
  return 'syntax error';
}

/**
 * Visits every named node depth-first, without recursion (deeply nested input must not overflow
 * the stack), and stops with ParseLimitError past MAX_NODES.
 */
export function eachNode(root: SyntaxNode, visit: (node: SyntaxNode) => void): void {
  const cursor = root.walk();
  let seen = 0;
  try {
    for (;;) {
      if (cursor.nodeIsNamed) {
        if (++seen > MAX_NODES) throw new ParseLimitError(`more than ${MAX_NODES} syntax nodes`);
        visit(cursor.currentNode);
      }
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) if (!cursor.gotoParent()) return;
    }
  } finally {
    cursor.delete();
  }
}
