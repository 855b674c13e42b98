import { expect } from 'chai';
import { type AuditReport, auditSkill } from '../../../src/domain/audit/index.js';
import { expectations, skillFiles } from './fixtures.js';

/**
 * Audits every skill of the evaluation set and holds the audit to the figures docs/audit.md
 * promises: no fail on a good skill, every bad skill at least warn, fail recall at least 0.9.
 */
describe('audit evaluation set', () => {
  const expected = expectations();
  const reports = new Map<string, AuditReport>();

  before(async () => {
    for (const name of Object.keys(expected)) reports.set(name, await auditSkill(skillFiles(name)));
  });

  it('has at least 30 skills, good and bad', () => {
    const values = Object.values(expected);
    expect(values.length).to.be.at.least(30);
    expect(values.filter((e) => e.verdict === 'pass').length).to.be.at.least(10);
    expect(values.filter((e) => e.verdict !== 'pass').length).to.be.at.least(15);
  });

  it('meets the thresholds of docs/audit.md', () => {
    let truePositives = 0;
    let falsePositives = 0;
    let falseNegatives = 0;
    let failOnGood = 0;
    let failExpected = 0;
    let failFound = 0;
    const misses: string[] = [];
    for (const [name, want] of Object.entries(expected)) {
      const got = reports.get(name) as AuditReport;
      const bad = want.verdict !== 'pass';
      const detected = got.verdict !== 'pass';
      if (bad && detected) truePositives++;
      if (!bad && detected) falsePositives++;
      if (bad && !detected) falseNegatives++;
      if (!bad && got.verdict === 'fail') failOnGood++;
      if (want.verdict === 'fail') {
        failExpected++;
        if (got.verdict === 'fail') failFound++;
      }
      if (got.verdict !== want.verdict) misses.push(`${name}: expected ${want.verdict}, got ${got.verdict}`);
    }
    const precision = truePositives / Math.max(1, truePositives + falsePositives);
    const recall = truePositives / Math.max(1, truePositives + falseNegatives);
    const failRecall = failFound / Math.max(1, failExpected);
    console.log(
      `      skills ${Object.keys(expected).length}; precision ${precision.toFixed(2)}, recall ${recall.toFixed(2)}, ` +
        `fail recall ${failRecall.toFixed(2)} (${failFound}/${failExpected}), fail on a good skill ${failOnGood}` +
        (misses.length ? `\n      verdicts that differ: ${misses.join('; ')}` : ''),
    );
    expect(failOnGood, 'fail on a good skill').to.equal(0);
    expect(recall, 'every bad skill at least warn').to.equal(1);
    expect(failRecall, 'fail recall').to.be.at.least(0.9);
    expect(precision, 'precision').to.be.at.least(0.9);
  });

  for (const [name, want] of Object.entries(expected))
    it(`${name}: ${want.verdict}${want.rules.length ? `, ${want.rules.join(', ')}` : ''}`, () => {
      const got = reports.get(name) as AuditReport;
      const fired = new Set(got.findings.map((f) => f.rule));
      const summary = got.findings
        .filter((f) => f.severity !== 'info')
        .map((f) => `${f.file}:${f.line} ${f.rule} ${f.message}`);
      expect(got.verdict, summary.join('\n')).to.equal(want.verdict);
      for (const rule of want.rules) expect([...fired], `rule ${rule}`).to.include(rule);
    });
});
