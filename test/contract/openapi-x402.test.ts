import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service.js';

interface Response {
  description: string;
  headers?: Record<string, { description: string }>;
  content?: Record<string, { schema?: { properties?: Record<string, unknown>; required?: string[] } }>;
}
interface Operation {
  operationId: string;
  parameters: Array<{ name: string; in: string; schema: unknown }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, Response>;
  'x-payment-info'?: {
    price: { mode: string; currency: string; amount?: string; min?: string; max?: string };
    protocols: unknown[];
  };
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
}

describe('contract: the OpenAPI document marks paid operations the way x402 crawlers read them', function () {
  this.timeout(60_000);
  let svc: TestService;
  let operations: Map<string, Operation>;

  before(async () => {
    svc = await startTestService();
    const doc: OpenApi = await (await fetch(`${svc.url}/openapi.json`)).json();
    operations = new Map(
      Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => [op.operationId, op] as const)),
    );
  });
  after(async () => svc?.stop());

  const op = (id: string) => {
    const found = operations.get(id);
    if (!found) throw new Error(`no operation ${id}`);
    return found;
  };

  it('registration is a fixed 1.00 USD over x402; a skill is dynamic, from the minimum price (0.01 USDC by default) to the 1,000 USDC cap', () => {
    expect(op('verifySignIn')['x-payment-info']).to.deep.equal({
      price: { mode: 'fixed', currency: 'USD', amount: '1.00' },
      protocols: [{ x402: {} }],
    });
    expect(op('getPost')['x-payment-info']).to.deep.equal({
      price: { mode: 'dynamic', currency: 'USD', min: '0.01', max: '1000.00' },
      protocols: [{ x402: {} }],
    });
  });

  it('only the paid operations carry x-payment-info', () => {
    const paid = [...operations.values()].filter((o) => o['x-payment-info']).map((o) => o.operationId);
    expect(paid.sort()).to.deep.equal(['getPost', 'verifySignIn']);
  });

  for (const id of ['getPost', 'verifySignIn']) {
    it(`${id}: documents its 402 (body schema and PAYMENT-REQUIRED) and the payment headers of its 200`, () => {
      const { responses } = op(id);
      const challenge = responses['402'];
      expect(challenge?.headers).to.have.property('PAYMENT-REQUIRED');
      const schema = challenge?.content?.['application/problem+json']?.schema;
      expect(schema?.properties).to.include.keys('x402Version', 'accepts', 'error', 'code');
      expect(schema?.required).to.include.members(['x402Version', 'accepts']);
      expect(responses['200']?.headers).to.include.keys('X-Payment-Id', 'PAYMENT-RESPONSE', 'X-PAYMENT-RESPONSE');
    });
  }

  it('each paid operation has an input schema (x402scan skips operations without one)', () => {
    const view = op('getPost').parameters.find((p) => p.name === 'view');
    expect(view, 'the view query parameter').to.not.equal(undefined);
    expect(view?.schema).to.deep.include({ enum: ['preview', 'full'] });
    const body = op('verifySignIn').requestBody?.content['application/json']?.schema as {
      properties: Record<string, unknown>;
    };
    expect(body.properties).to.include.keys('message', 'signature');
  });

  it('the receipt and x402 discovery routes are documented', () => {
    expect(op('getPaymentReceipt').responses).to.include.keys('200', '404', '409');
    expect(op('getX402Discovery').responses).to.include.keys('200');
    // Publishing takes an optional body: clients that send none keep working.
    const publish = op('publishPost') as Operation & { requestBody?: { required: boolean } };
    expect(publish.requestBody?.required).to.equal(false);
  });
});
