/**
 * What a parser-based extractor learns about one piece of code, independent of its language. The
 * rules turn facts into findings, so shell, Python and JavaScript are judged by the same logic.
 */

export interface Located {
  line: number;
  /** 0-based column in the line, when known: centres the excerpt of a long line. */
  column?: number;
}

export interface NetworkFact extends Located {
  /** Host name or IP, lower case; undefined when the destination is computed at run time. */
  host?: string;
  via: string;
}

export interface SecretReadFact extends Located {
  kind: 'env-var' | 'env-dump' | 'credential-file';
  what: string;
}

export interface DetailFact extends Located {
  detail: string;
}

export interface WriteFact extends Located {
  path: string;
  via: string;
}

/** Shell text a script hands to a shell (exec, os.system…), audited as shell at the call's line. */
export interface ShellSnippet extends Located {
  text: string;
}

export interface CodeFacts {
  network: NetworkFact[];
  pipeToShell: DetailFact[];
  evalFetched: DetailFact[];
  execDecoded: DetailFact[];
  charCodes: DetailFact[];
  secretReads: SecretReadFact[];
  writes: WriteFact[];
  persistence: DetailFact[];
  shellSnippets: ShellSnippet[];
}

export function emptyFacts(): CodeFacts {
  return {
    network: [],
    pipeToShell: [],
    evalFetched: [],
    execDecoded: [],
    charCodes: [],
    secretReads: [],
    writes: [],
    persistence: [],
    shellSnippets: [],
  };
}

/** Appends every fact of `more` to `into`, optionally moving them all to one line (nested snippets). */
export function mergeFacts(into: CodeFacts, more: CodeFacts, at?: Located): void {
  for (const key of Object.keys(into) as (keyof CodeFacts)[]) {
    const target = into[key] as Located[];
    for (const fact of more[key] as Located[]) target.push(at ? { ...fact, line: at.line, column: at.column } : fact);
  }
}

/** Environment variable names that hold secrets by convention. */
const SECRET_NAME =
  /(KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|^AWS_|^GH_|^GITHUB_|^NPM_)/i;

export function isSecretEnvName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * Paths whose content is a credential. authorized_keys and known_hosts hold public data and are
 * judged as persistence targets instead.
 */
const CREDENTIAL_PATH =
  /(\.ssh\/(id_|identity|[^/]*\.pem)|\.ssh\/?$|\.aws\/credentials|\.netrc|\.git-credentials|\.docker\/config\.json|\.kube\/config|\.config\/gh\/hosts|\.npmrc|\.pypirc|\.gnupg|keychain|\/etc\/shadow|(^|\/)\.env(\.[\w-]+)?$|id_rsa|id_ed25519|id_ecdsa)/i;

export function isCredentialPath(path: string): boolean {
  return CREDENTIAL_PATH.test(path);
}

/** Home directory spellings of every language, normalised to "~". */
export function normalisePath(path: string): string {
  return path
    .trim()
    .replace(/^(\$HOME|\$\{HOME\}|%USERPROFILE%|%HOME%)(?=\/|$)/, '~')
    .replace(/\/{2,}/g, '/');
}

/** Shell start-up files and the places a program goes to run again later. */
const PERSISTENCE_PATH =
  /^(~\/\.(bashrc|bash_profile|bash_login|bash_logout|zshrc|zprofile|zshenv|zlogin|profile|kshrc|cshrc|tcshrc|inputrc)$|~\/\.config\/fish\/|~\/\.ssh\/authorized_keys|~\/\.ssh\/rc$|~\/Library\/LaunchAgents\/|\/Library\/Launch(Agents|Daemons)\/|\/etc\/|~\/\.config\/systemd\/|~\/\.config\/autostart\/|\/var\/spool\/cron|\/usr\/lib\/systemd\/|\/lib\/systemd\/)/;

export type WriteTarget = 'persistence' | 'outside' | 'inside';

/** Where a written path lands: a persistence location, elsewhere outside the skill, or inside it. */
export function classifyWrite(raw: string): WriteTarget {
  const path = normalisePath(raw);
  if (PERSISTENCE_PATH.test(path)) return 'persistence';
  if (/^\/(tmp|dev\/(null|stdout|stderr|fd\/))/.test(path) || path.startsWith('/dev/null')) return 'inside';
  if (path.startsWith('/') || path.startsWith('~') || /^[A-Za-z]:[\\/]/.test(path)) return 'outside';
  return 'inside';
}
