import { expect } from 'chai';
import { CATALOGUE, documentAtTemplate, isStaticPath } from '../../src/documents/catalog.js';
import { startTestService, type TestService } from '../support/service.js';

interface Operation {
  'x-static-document'?: boolean;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

/** A concrete path of a template, with values the catalogue's path parameters accept. */
const concrete = (template: string) =>
  template
    .replace('{handle}', 'some-agent-7')
    .replace('{postId}', '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6')
    .replace(/\{\w+\}/g, 'x');

describe('contract: the OpenAPI document describes published documents by the catalogue', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: OpenApi;

  before(async () => {
    svc = await startTestService();
    doc = await (await fetch(`${svc.url}/openapi.json`)).json();
  });
  after(async () => svc?.stop());

  const gets = () => Object.entries(doc.paths).flatMap(([path, ops]) => (ops.get ? [{ path, op: ops.get }] : []));

  it('every document route has a catalogue entry, and every catalogued path is a document route', () => {
    const documentRoutes = gets().filter(({ op }) => op['x-static-document']);
    expect(documentRoutes.length).to.be.greaterThan(0);
    for (const { path } of documentRoutes) expect(documentAtTemplate(path), path).to.not.equal(undefined);
    // A route answering a catalogued path must say it is one (the edge serves it from the bucket).
    for (const { path, op } of gets())
      if (isStaticPath(concrete(path))) expect(op['x-static-document'], path).to.equal(true);
    expect(documentRoutes.map(({ path }) => path).sort()).to.deep.equal(CATALOGUE.map((d) => d.path).sort());
  });

  it("each document route's 200 response is the catalogue's content type and schema", () => {
    for (const { path, op } of gets().filter(({ op }) => op['x-static-document'])) {
      const document = documentAtTemplate(path);
      if (!document) throw new Error(`${path}: no catalogue entry`);
      const content = op.responses['200']?.content ?? {};
      const mediaType = document.contentType.split(';')[0]?.trim() ?? '';
      expect(Object.keys(content), path).to.deep.equal([mediaType]);
      const ref = content[mediaType]?.schema?.$ref;
      if (!document.schema) {
        expect(ref, path).to.equal(undefined);
        continue;
      }
      expect(ref, path).to.equal(`#/components/schemas/${document.id}`);
      expect(doc.components.schemas[document.id], path).to.deep.equal(document.schema);
    }
  });
});
