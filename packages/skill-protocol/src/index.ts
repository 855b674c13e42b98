/**
 * What the marketplace and its clients (the skill-market CLI, any buyer) must compute and read
 * alike. Each module is also its own entry point (`@skill-market/skill-protocol/skill-digest`, ...),
 * so a client loads only what it uses.
 */
export * from './identity-registry-abi.js';
export * from './reputation-registry-abi.js';
export * from './responses.js';
export * from './skill-digest.js';
export * from './skill-frontmatter.js';
export * from './version-signature.js';
export * from './skills-index-layout.js';
export * from './review-typed-data.js';
export * from './refund-typed-data.js';
