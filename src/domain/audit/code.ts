import { type CodeFacts, emptyFacts, mergeFacts } from './facts.js';
import type { Language } from './languages.js';
import { javascriptFacts } from './lang/javascript.js';
import { pythonFacts } from './lang/python.js';
import { shellFacts } from './lang/shell.js';
import {
  bracketDepth,
  firstSyntaxError,
  MAX_NESTING,
  MAX_PARSED_CHARS,
  ParseLimitError,
  treeSitterParsers,
  withTree,
} from './parsers.js';

/** Facts read from a piece of code, and why it could not be read whole, if it could not. */
export interface CodeReading {
  facts: CodeFacts;
  problem?: string;
}

type Parsers = Awaited<ReturnType<typeof treeSitterParsers>>;

/** Shell handed to exec()/os.system() is audited as shell, but only this deep (it can nest). */
const MAX_SNIPPET_DEPTH = 3;

function parseOnce(parsers: Parsers, language: Language, text: string): CodeReading {
  switch (language) {
    case 'shell':
      return withTree(parsers.bash, text, (root) => ({ facts: shellFacts(root), problem: firstSyntaxError(root) }));
    case 'python':
      return withTree(parsers.python, text, (root) => ({ facts: pythonFacts(root), problem: firstSyntaxError(root) }));
    case 'javascript':
    case 'typescript':
      return javascriptFacts(text, language === 'typescript');
    default:
      return { facts: emptyFacts(), problem: 'no parser for this language: text checks only' };
  }
}

/**
 * Parses code and reads its facts. A parser that throws, or input past the size and node limits,
 * yields a problem instead of an exception: the caller reports the file as unreadable.
 */
export function readCode(parsers: Parsers, language: Language, text: string, depth = 0): CodeReading {
  if (text.length > MAX_PARSED_CHARS)
    return { facts: emptyFacts(), problem: `too large to parse (${text.length} > ${MAX_PARSED_CHARS} characters)` };
  if (bracketDepth(text) > MAX_NESTING)
    return { facts: emptyFacts(), problem: `nesting too deep to parse (more than ${MAX_NESTING} levels)` };
  let reading: CodeReading;
  try {
    reading = parseOnce(parsers, language, text);
  } catch (err) {
    const why =
      err instanceof ParseLimitError ? err.message : err instanceof RangeError ? 'nesting too deep' : String(err);
    return { facts: emptyFacts(), problem: `parser failed: ${why}`.slice(0, 200) };
  }
  if (depth < MAX_SNIPPET_DEPTH)
    for (const snippet of reading.facts.shellSnippets) {
      const nested = readCode(parsers, 'shell', snippet.text, depth + 1);
      mergeFacts(reading.facts, { ...nested.facts, shellSnippets: [] }, snippet);
    }
  return reading;
}

export { treeSitterParsers };
