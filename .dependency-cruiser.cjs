/**
 * The layers of the service and which may import which (docs/architecture.md draws them).
 * `npm run deps` checks src/, jobs/, workers/ and packages/ against these rules in CI, after the type check.
 *
 * From the bottom up:
 *   src/platform   config, logger, errors, clients, small pure helpers
 *   src/data       schema, connection, migrations, repositories (every SQL statement)
 *   src/documents  the catalogue of published documents: paths, keys, cache policies, schemas, renderers
 *   src/domain     rules and use cases
 *   src/api, jobs  the two entry points into the domain (HTTP, queue)
 *   workers        BullMQ wiring that runs jobs
 *   src/bootstrap  the composition root: the only place that builds and wires everything
 *   src/main.ts    the process entry: reads the role and the config, starts src/bootstrap
 *   src/cli        the skill-market command-line client of the service (bin/skill-market.mjs)
 *   packages/skill-protocol  what the service and its clients agree on (digests, version signatures,
 *                  frontmatter rules, answer shapes, ABIs); pure, imports none of the above
 *
 * Every rule forbids an import upward (or sideways between the two entry points), so the layers
 * form no cycle; `no-circular` also keeps modules inside a layer free of cycles.
 *
 * A use case is a domain function that carries out one request or job end to end: validate,
 * load (through a repository or a client), decide, save or publish. They live in
 * `*.use-cases.ts` files and in the modules named for one flow below. A renderer
 * never runs one: it is a pure function of its input.
 */

const LAYERS_ABOVE_DATA = '^(src/(documents|domain|api|bootstrap)/|jobs/|workers/|src/main\\.ts$)';
const USE_CASES =
  '^src/domain/(.+\\.use-cases\\.ts|payments/(paywall/(paywall|repeats)|ledger/(resolve-payment|settlement))\\.ts|identity/sign-in\\.ts|' +
  'agents/(agent-documents|profile)\\.ts|publishing/publish-document\\.ts)$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'platform-is-the-floor',
      comment:
        'src/platform (config, clients, helpers) is what every layer stands on, so it imports none of them. ' +
        'Wiring that needs the domain or the API belongs in src/bootstrap.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: ['^src/data/', LAYERS_ABOVE_DATA] },
    },
    {
      name: 'data-below-everything-but-platform',
      comment: 'src/data (schema, connection, migrations) knows tables, not what the service does with them.',
      severity: 'error',
      from: { path: '^src/data/' },
      to: { path: LAYERS_ABOVE_DATA },
    },
    {
      name: 'documents-run-no-use-cases',
      comment:
        'A renderer turns the rows it is given into a document; it never loads, decides or saves. ' +
        'The use case loads and passes the rows (or the values computed from them) in.',
      severity: 'error',
      from: { path: '^src/documents/' },
      to: { path: USE_CASES },
    },
    {
      name: 'documents-below-domain',
      comment:
        'Use cases render and publish documents, so src/domain imports src/documents; an import back would ' +
        'make the two one layer. A pure piece both need moves down (into src/documents or src/platform), or ' +
        'the domain passes it to the renderer as an argument.',
      severity: 'error',
      from: { path: '^src/documents/' },
      to: { path: '^src/domain/', pathNot: USE_CASES },
    },
    {
      name: 'documents-below-entry-points',
      comment: 'Renderers serve the API and the workers alike, so they know neither.',
      severity: 'error',
      from: { path: '^src/documents/' },
      to: { path: '^(src/(api|bootstrap)/|jobs/|workers/|src/main\\.ts$)' },
    },
    {
      name: 'documents-read-rows-not-the-database',
      comment: 'Renderers take rows; of src/data they may use only the row types in schema.ts.',
      severity: 'error',
      from: { path: '^src/documents/' },
      to: { path: '^src/data/', pathNot: '^src/data/schema\\.ts$' },
    },
    {
      name: 'domain-below-entry-points',
      comment:
        'The API and the workers share domain code, never the other way round: a use case does not know ' +
        'whether an HTTP request or a job called it.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^(src/(api|bootstrap)/|jobs/|workers/|src/main\\.ts$)' },
    },
    {
      name: 'api-beside-jobs',
      comment: 'Routes hand work to the queue through src/platform/queues.ts, never by importing a job or a worker.',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^(jobs/|workers/|src/bootstrap/|src/main\\.ts$)' },
    },
    {
      name: 'jobs-beside-api',
      comment: 'Jobs call use cases, never route code; workers run jobs, not the other way round.',
      severity: 'error',
      from: { path: '^jobs/' },
      to: { path: '^(src/api/|workers/|src/bootstrap/|src/main\\.ts$)' },
    },
    {
      name: 'workers-beside-api',
      comment: 'A worker process may run without the API; it shares domain code with it, never route code.',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^(src/api/|src/bootstrap/|src/main\\.ts$)' },
    },
    {
      name: 'only-the-entry-imports-bootstrap',
      comment:
        'src/bootstrap is the composition root: it imports every layer, and only src/main.ts (and tests, ' +
        'benches, scripts) import it. Nothing imports src/main.ts.',
      severity: 'error',
      from: { path: '^(src|jobs|workers)/', pathNot: '^src/(bootstrap/|main\\.ts$)' },
      to: { path: '^src/(bootstrap/|main\\.ts$)' },
    },
    {
      name: 'payments-protocol-is-pure',
      comment:
        'src/domain/payments/protocol holds the x402 messages, terms, EIP-3009 and the extensions: pure code ' +
        'that the paywall, the facilitators and the ledger share. It reads no table (only the row types of ' +
        'schema.ts), opens no connection, and knows none of the parts built on it.',
      severity: 'error',
      from: { path: '^src/domain/payments/protocol/' },
      to: {
        path: [
          '^src/data/',
          '^src/platform/(redis|queues|object-store|outbound-fetch|net|metrics-server|shared-reads)\\.ts$',
          '^src/domain/payments/(paywall|facilitators|ledger)/',
        ],
        pathNot: '^src/data/(schema|column-types)\\.ts$',
      },
    },
    {
      name: 'payments-lifecycle-runs-one-way',
      comment:
        'The paywall drives a payment through the facilitators and the ledger; they never call back into it, ' +
        'and a facilitator knows nothing of how a payment is recorded.',
      severity: 'error',
      from: { path: '^src/domain/payments/(facilitators|ledger)/' },
      to: { path: '^src/domain/payments/paywall/' },
    },
    {
      name: 'facilitators-know-no-ledger',
      comment:
        "A facilitator verifies and settles an authorization; recording it is the ledger's, driven by the paywall or the retry job.",
      severity: 'error',
      from: { path: '^src/domain/payments/facilitators/' },
      to: { path: '^src/domain/payments/ledger/' },
    },
    {
      name: 'transports-live-in-the-api',
      comment:
        "How a payment travels (x402 HTTP headers, MCP _meta) is the adapters' business in src/api: the " +
        'domain takes and gives x402 messages as objects.',
      severity: 'error',
      from: { path: '^(src/(domain|documents|data)/|jobs/|workers/)' },
      to: { path: '^node_modules/@x402/core/dist/.+/http/' },
    },
    {
      name: 'entry-is-thin',
      comment: 'src/main.ts reads the role and the config and starts src/bootstrap; everything else is wired there.',
      severity: 'error',
      from: { path: '^src/main\\.ts$' },
      to: { path: '^(src/(data|documents|domain|api)/|jobs/|workers/)' },
    },
    {
      name: 'every-module-has-a-layer',
      comment: 'A module directly in src/ (other than the entry) belongs to no layer, so no other rule would check it.',
      severity: 'error',
      from: { path: '^src/[^/]+$', pathNot: '^src/main\\.ts$' },
      to: {},
    },
    {
      name: 'no-framework-below-entry-points',
      comment:
        'Domain, documents and data never see req, res or BullMQ objects: Express belongs to src/api, ' +
        'BullMQ to src/platform/queues.ts and workers/.',
      severity: 'error',
      from: { path: '^(src/(domain|documents|data)/|jobs/)' },
      to: { path: '^node_modules/(express|bullmq|@bull-board)/' },
    },
    {
      name: 'no-test-code-in-the-service',
      comment: 'test/, bench/ and scripts/ use the service; the service never uses them.',
      severity: 'error',
      from: { path: '^(src|jobs|workers)/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'cli-is-a-client',
      comment:
        'src/cli (the skill-market client) talks to a marketplace over HTTP like any agent, so it imports no ' +
        'layer of the service: only its own modules, packages/skill-protocol (what the market and its clients ' +
        'agree on: digests, version signatures, frontmatter rules, answer shapes, ABIs), npm packages and node.',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { pathNot: '^(src/cli/|packages/skill-protocol/src/|node_modules/)', dependencyTypesNot: ['core'] },
    },
    {
      name: 'skill-protocol-is-pure',
      comment:
        'packages/skill-protocol is shared by the service and its clients, so it knows neither: it imports ' +
        'nothing from src/, jobs/, workers/ (nor tests), and does no I/O: of node only crypto, of npm only ' +
        'zod, viem and yaml (declared in its package.json).',
      severity: 'error',
      from: { path: '^packages/skill-protocol/' },
      to: { pathNot: '^(packages/skill-protocol/src/|node_modules/(zod|viem|yaml|abitype)/|(node:)?crypto$)' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'The client is an entry point of its own (bin/skill-market.mjs); the service never uses it.',
      severity: 'error',
      from: { path: '^(src|jobs|workers)/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'no-circular',
      comment: 'A cycle between modules makes their load order matter and hides which one depends on which.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    // A package's build output (npm run build) is not checked: its sources are.
    exclude: { path: '^packages/[^/]+/dist/' },
    // Type-only imports count: importing a layer's types ties a module to that layer as much as
    // importing its functions does.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.js', '.d.ts', '.ts', '.mjs', '.cjs', '.d.cts', '.d.mts', '.mts', '.cts'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
