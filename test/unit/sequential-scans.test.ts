import { expect } from 'chai';
import { sequentialScans } from '../../src/data/db.js';

describe('the scan check reads the sequential scans out of an auto_explain plan', () => {
  it('counts the rows each scan read (returned and filtered out, over all its loops), at any depth', () => {
    const plan = {
      'Node Type': 'Nested Loop',
      Plans: [
        {
          'Node Type': 'Index Scan',
          'Relation Name': 'agents',
          'Actual Rows': 1,
          'Actual Loops': 1,
        },
        {
          'Node Type': 'Hash',
          Plans: [
            {
              'Node Type': 'Seq Scan',
              'Relation Name': 'posts',
              'Actual Rows': 10,
              'Actual Loops': 3,
              'Rows Removed by Filter': 99_990,
            },
          ],
        },
      ],
    };
    expect(sequentialScans(plan)).to.deep.equal([{ relation: 'posts', rows: 300_000 }]);
  });

  it('finds none in a plan of index scans only', () => {
    expect(
      sequentialScans({ 'Node Type': 'Index Only Scan', 'Relation Name': 'purchases', 'Actual Rows': 5 }),
    ).to.deep.equal([]);
  });
});
