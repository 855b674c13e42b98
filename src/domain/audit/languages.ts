/**
 * Which files are programs and in what language, from the extension or else the shebang line.
 * Only shell, Python and JavaScript/TypeScript have parsers; other scripts get the text checks.
 */

export type Language = 'shell' | 'python' | 'javascript' | 'typescript' | 'other-script';

export interface ScriptKind {
  language: Language;
  /** What runs it, as a reader knows it: "bash", "python3", "node"… */
  interpreter: string;
}

const BY_EXTENSION: Record<string, ScriptKind> = {
  sh: { language: 'shell', interpreter: 'sh' },
  bash: { language: 'shell', interpreter: 'bash' },
  zsh: { language: 'shell', interpreter: 'zsh' },
  ksh: { language: 'shell', interpreter: 'ksh' },
  py: { language: 'python', interpreter: 'python' },
  pyw: { language: 'python', interpreter: 'python' },
  js: { language: 'javascript', interpreter: 'node' },
  mjs: { language: 'javascript', interpreter: 'node' },
  cjs: { language: 'javascript', interpreter: 'node' },
  jsx: { language: 'javascript', interpreter: 'node' },
  ts: { language: 'typescript', interpreter: 'node (TypeScript)' },
  mts: { language: 'typescript', interpreter: 'node (TypeScript)' },
  cts: { language: 'typescript', interpreter: 'node (TypeScript)' },
  tsx: { language: 'typescript', interpreter: 'node (TypeScript)' },
  rb: { language: 'other-script', interpreter: 'ruby' },
  pl: { language: 'other-script', interpreter: 'perl' },
  php: { language: 'other-script', interpreter: 'php' },
  lua: { language: 'other-script', interpreter: 'lua' },
  ps1: { language: 'other-script', interpreter: 'PowerShell' },
  bat: { language: 'other-script', interpreter: 'cmd.exe' },
  cmd: { language: 'other-script', interpreter: 'cmd.exe' },
  applescript: { language: 'other-script', interpreter: 'osascript' },
  r: { language: 'other-script', interpreter: 'Rscript' },
};

/** The interpreter a "#!" line names: "#!/usr/bin/env -S python3 -u" → "python3". */
export function shebangInterpreter(firstLine: string): string | undefined {
  if (!firstLine.startsWith('#!')) return undefined;
  const words = firstLine.slice(2).trim().split(/\s+/);
  let program = (words[0] ?? '').split('/').pop() ?? '';
  if (program === 'env') program = words.slice(1).find((w) => !w.startsWith('-')) ?? '';
  return program || undefined;
}

function languageOfInterpreter(program: string): Language {
  if (/^(ba|z|k|da|a)?sh$/.test(program)) return 'shell';
  if (/^python[\d.]*$/.test(program)) return 'python';
  if (/^(node|nodejs|bun)$/.test(program)) return 'javascript';
  if (/^(deno|tsx|ts-node)$/.test(program)) return 'typescript';
  return 'other-script';
}

export function extensionOf(path: string): string {
  const name = path.split('/').pop() ?? '';
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : '';
}

/** Documents and data the agent reads rather than runs. */
export function isDocument(path: string): boolean {
  return /^(md|markdown|mdx|txt|rst|adoc|json|ya?ml|toml|csv|tsv|xml|html?|svg|css|ini|cfg|conf|lock)$/.test(
    extensionOf(path),
  );
}

export function isMarkdown(path: string): boolean {
  return /^(md|markdown|mdx|txt)$/.test(extensionOf(path));
}

/** The script kind of a file, or undefined when it is not a program. */
export function scriptKind(path: string, content: string): ScriptKind | undefined {
  const byExtension = BY_EXTENSION[extensionOf(path)];
  if (byExtension) {
    const declared = shebangInterpreter(content.slice(0, 200).split('\n', 1)[0] ?? '');
    return declared ? { language: byExtension.language, interpreter: declared } : byExtension;
  }
  if (isDocument(path)) return undefined;
  const program = shebangInterpreter(content.slice(0, 200).split('\n', 1)[0] ?? '');
  return program ? { language: languageOfInterpreter(program), interpreter: program } : undefined;
}

/** The parser language of a markdown code block's info string, if it has one. */
export function blockLanguage(info: string): Language | undefined {
  if (/^(sh|bash|shell|zsh|console|shell-session|shellsession)$/.test(info)) return 'shell';
  if (/^(py|python|python3)$/.test(info)) return 'python';
  if (/^(js|javascript|node|mjs|cjs|jsx)$/.test(info)) return 'javascript';
  if (/^(ts|typescript|tsx)$/.test(info)) return 'typescript';
  return undefined;
}
