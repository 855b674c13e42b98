import { expect } from 'chai';
import { printable, printableJson, shown } from '../../src/cli/terminal-text.js';

const ESC = '\u001b';
const BEL = '\u0007';

describe('remote text as the client prints it', () => {
  it('shows ANSI colour and cursor sequences, OSC titles and hyperlinks as escapes', () => {
    expect(printable(`${ESC}[31mred${ESC}[0m`)).to.equal('\\x1b[31mred\\x1b[0m');
    expect(printable(`${ESC}]0;pwned${BEL}`)).to.equal('\\x1b]0;pwned\\x07');
    expect(printable(`${ESC}]8;;https://evil.example${ESC}\\click${ESC}]8;;${ESC}\\`)).to.equal(
      '\\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\',
    );
    expect(printable(`${ESC}[2J${ESC}[H`)).to.equal('\\x1b[2J\\x1b[H');
  });

  it('shows line breaks, carriage returns, backspaces, DEL and the 8-bit C1 controls as escapes', () => {
    expect(printable('a\nb\rc\td\be\u007f')).to.equal('a\\nb\\rc\\td\\x08e\\x7f');
    expect(printable('\u009b31m \u009d0;t\u009c \u0085')).to.equal('\\x9b31m \\x9d0;t\\x9c \\x85');
    expect(printable('\u0000')).to.equal('\\x00');
  });

  it('shows bidi overrides, isolates and invisible marks as escapes', () => {
    expect(printable('invoice\u202Efdp.exe')).to.equal('invoice\\u202efdp.exe');
    for (const cp of [0x202a, 0x202b, 0x202c, 0x202d, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c])
      expect(printable(String.fromCodePoint(cp)), cp.toString(16)).to.equal(`\\u${cp.toString(16).padStart(4, '0')}`);
    expect(printable('a\u200bb\u2028c\ufeff')).to.equal('a\\u200bb\\u2028c\\ufeff');
  });

  it('leaves ordinary text alone: accents, other scripts, emoji (with their joiners)', () => {
    for (const text of ['Météo à Brest', 'دليل الطقس', '天気予報', '👩‍👩‍👧 family', 'C:\\path', 'a "quoted" title'])
      expect(printable(text)).to.equal(text);
  });

  it('keeps the characters asked for: the client keeps its own line breaks', () => {
    expect(printable(`one\ntwo\t${ESC}[1m`, '\n\t')).to.equal(`one\ntwo\t\\x1b[1m`);
  });

  it('shown escapes every interpolated value and keeps the template', () => {
    const title = `Weather${ESC}]0;owned${BEL}\n  payment       0xfake`;
    expect(shown`bought "${title}"\n  files ${['a', 'b'].join(', ')}`).to.equal(
      'bought "Weather\\x1b]0;owned\\x07\\n  payment       0xfake"\n  files a, b',
    );
    expect(shown`${undefined} ${null} ${3}`).to.equal('undefined null 3');
  });

  it('printableJson writes DEL, C1 and bidi characters as \\u escapes, and the JSON still reads as the same value', () => {
    const value = { bio: `x${ESC}[31m\u0085\u009b\u202e\u2066y`, handle: 'Météo' };
    const text = printableJson(value);
    const raw = [...text].filter((ch) => /[^\n -~\u00a0-\u2029\u202f-\u2065\u206a-\uffff]/u.test(ch));
    expect(raw).to.deep.equal([]);
    expect(text).to.contain('\\u001b[31m\\u0085\\u009b\\u202e\\u2066');
    expect(JSON.parse(text)).to.deep.equal(value);
  });
});
