/** The shapes the installer reads from a marketplace (docs/skills.md), as far as it relies on them. */

export interface FileDigest {
  path: string;
  digest: string;
}

export interface Signature {
  signer: string;
  value: string;
  scheme?: string;
}

/** `integrity` of a full view: the version's name, digests and the seller's signature. */
export interface Integrity {
  name: string;
  version: number;
  versionLabel: string;
  skillDigest: string;
  files: FileDigest[];
  signature: Signature | null;
}

export interface Price {
  amount: string;
  asset: string;
  decimals: number;
  network: string;
  free: boolean;
}

/** GET /api/posts/{id}: the public view. */
export interface PreviewView {
  id: string;
  title: string;
  status: string;
  author: { handle: string; walletAddress: string };
  price: Price;
  version: number;
}

/** GET /api/posts/{id}?view=full, when entitled. */
export interface FullView extends PreviewView {
  versionLabel?: string;
  files?: { path: string; content: string }[];
  integrity?: Integrity;
}

export interface IndexVersion {
  version: number;
  versionLabel: string;
  digest: string;
  files: FileDigest[];
  signature: Signature | null;
}

/** A skill of /.well-known/agent-skills/index.json. */
export interface IndexEntry {
  name: string;
  description: string;
  digest: string;
  files: FileDigest[];
  id: string;
  title: string;
  version: number;
  versionLabel: string;
  signature: Signature | null;
  seller: { handle: string; walletAddress: string };
  price: Price;
  versions?: IndexVersion[];
}

export interface SkillsIndex {
  version: string;
  skills: IndexEntry[];
}

/** A result of GET /api/discovery/search (docs/discovery.md, "Search"); a market may omit the optional fields. */
export interface SearchHit {
  type: string;
  id: string;
  title: string;
  url: string;
  label?: string;
  page?: string;
  seller?: { handle: string; displayName: string | null; score: number };
  priceAtomic?: string;
  priceUsdc?: string;
  buyers?: number;
  sales90d?: number;
  preview?: string;
  version?: string;
  publishedSkills?: number;
}
