import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { API_VERSION } from '../../src/api/openapi.js';
import {
  MCP_PATH,
  MCP_PREVIOUS_PROTOCOL_VERSIONS,
  MCP_PROTOCOL_VERSION,
} from '../../src/documents/site-agent-card.renderer.js';

const json = (path: string) => JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8'));
const SCHEMA = json('../fixtures/mcp-registry/server.schema.2025-12-11.json');
const SERVER = json('../../server.json');

/** The MCP Registry's validator of server.json (draft-07, formats checked), as the registry runs it. */
function registryErrors(doc: unknown): string[] {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const validate = ajv.compile(SCHEMA);
  return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

describe('server.json: the marketplace in the MCP Registry', () => {
  it('is valid against the registry schema it names', () => {
    expect(SERVER.$schema).to.equal(SCHEMA.$id);
    expect(registryErrors(SERVER)).to.deep.equal([]);
  });

  it('names the remote Streamable HTTP endpoint by URL template, the API version and the revisions served', () => {
    const [remote] = SERVER.remotes;
    expect(remote.type).to.equal('streamable-http');
    expect(remote.url.replace('{host}', 'market.example')).to.equal(`https://market.example${MCP_PATH}`);
    expect(remote.variables.host.isRequired).to.equal(true);
    expect(SERVER.version).to.equal(API_VERSION);
    expect(SERVER._meta['io.modelcontextprotocol.registry/publisher-provided'].protocolVersions).to.deep.equal([
      MCP_PROTOCOL_VERSION,
      ...MCP_PREVIOUS_PROTOCOL_VERSIONS,
    ]);
  });

  it('the validator refuses what the registry refuses: a name without its namespace, a description over 100 characters, a remote without a URL', () => {
    expect(registryErrors({ ...SERVER, name: 'skill-market' })).to.not.deep.equal([]);
    expect(registryErrors({ ...SERVER, description: 'x'.repeat(101) })).to.not.deep.equal([]);
    expect(registryErrors({ ...SERVER, remotes: [{ type: 'streamable-http' }] })).to.not.deep.equal([]);
  });
});
