import { describe, expect, it } from 'vitest';
import type { Motd } from '../../src/core/types.js';
import { ampersandToSection, cleanServerText, escapeHtml, formatMotd } from '../../src/motd/index.js';

type Case = [name: string, input: unknown, expected: Partial<Motd>];

const CASES: Case[] = [
  ['plain string', 'A Minecraft Server', { raw: 'A Minecraft Server', clean: 'A Minecraft Server', html: 'A Minecraft Server', raw_lines: ['A Minecraft Server'] }],
  ['empty string', '', { raw: '', clean: '', html: '', raw_lines: [], clean_lines: [] }],
  ['null', null, { raw: '', clean: '', html: '', raw_lines: [], clean_lines: [] }],
  [
    '§ colours and styles',
    '§aGreen §lbold§r plain',
    {
      raw: '§aGreen §lbold§r plain',
      clean: 'Green bold plain',
      html: '<span style="color: #55ff55">Green </span><span style="color: #55ff55; font-weight: bold">bold</span> plain',
    },
  ],
  [
    'a colour code clears styles (Java client behaviour)',
    '§l§nBold§cRed',
    {
      clean: 'BoldRed',
      html: '<span style="font-weight: bold; text-decoration: underline">Bold</span><span style="color: #ff5555">Red</span>',
    },
  ],
  [
    'uppercase codes, unknown codes and a trailing §',
    '§AHi §zthere§',
    { raw: '§AHi §zthere§', clean: 'Hi there', html: '<span style="color: #55ff55">Hi there</span>' },
  ],
  [
    'two lines',
    '§6Line one\n§7Line two',
    {
      raw_lines: ['§6Line one', '§7Line two'],
      clean_lines: ['Line one', 'Line two'],
      html: '<span style="color: #ffaa00">Line one\n</span><span style="color: #aaaaaa">Line two</span>',
    },
  ],
  [
    'CRLF, tabs and control characters',
    'a\r\nb\tc\u0000\u0007\u001b[31md\u0085',
    { raw: 'a\nb c[31md', clean_lines: ['a', 'b c[31md'] },
  ],
  [
    'strikethrough and obfuscated',
    '§mgone§r §kmagic',
    {
      clean: 'gone magic',
      html: '<span style="text-decoration: line-through">gone</span> <span class="mc-obfuscated">magic</span>',
    },
  ],
  [
    'BungeeCord hex in a § string',
    '§x§f§f§0§0§8§8Pink',
    { clean: 'Pink', html: '<span style="color: #ff0088">Pink</span>' },
  ],
  [
    'chat component with extra and inheritance',
    { text: 'A', color: 'red', bold: true, extra: [{ text: 'B', bold: false }, { text: 'C', color: 'blue' }] },
    {
      raw: '§c§lA§cB§9§lC',
      clean: 'ABC',
      html:
        '<span style="color: #ff5555; font-weight: bold">A</span>' +
        '<span style="color: #ff5555">B</span>' +
        '<span style="color: #5555ff; font-weight: bold">C</span>',
    },
  ],
  [
    'chat component with a hex colour: raw gets the nearest named colour, html the exact one',
    { text: 'Sky', color: '#3366CC' },
    { raw: '§9Sky', html: '<span style="color: #3366cc">Sky</span>' },
  ],
  [
    'chat component with § codes inside text; §r returns to the component style',
    { text: '§eYellow§r back', color: 'aqua', italic: true },
    {
      clean: 'Yellow back',
      html:
        '<span style="color: #ffff55">Yellow</span>' +
        '<span style="color: #55ffff; font-style: italic"> back</span>',
    },
  ],
  [
    'array form: the first element styles the rest',
    [{ text: 'x', color: 'gold' }, 'y', { text: 'z', color: 'green' }],
    { raw: '§6xy§az', clean: 'xyz' },
  ],
  [
    'translate with with',
    { translate: 'chat.type.text', fallback: '<%s> %s', with: [{ text: 'Steve', color: 'yellow' }, 'hello'] },
    { clean: '<Steve> hello', html: '&lt;<span style="color: #ffff55">Steve</span>&gt; hello' },
  ],
  [
    'translate with positional arguments, %% and a missing argument',
    { translate: '%2$s before %1$s, 100%% %s%s', with: ['one', 'two'] },
    { clean: 'two before one, 100% onetwo' },
  ],
  [
    'translate without fallback uses the key as template',
    { translate: 'multiplayer.status.%s', with: ['online'] },
    { clean: 'multiplayer.status.online' },
  ],
  [
    'numbers, keybinds, selectors and scores as text',
    { text: '', extra: [42, true, { keybind: 'key.jump' }, { selector: '@p' }, { score: { name: 'x', objective: 'y', value: '7' } }] },
    { clean: '42truekey.jump@p7' },
  ],
];

describe('formatMotd', () => {
  it.each(CASES)('%s', (_name, input, expected) => {
    const motd = formatMotd(input);
    expect(motd).toMatchObject(expected);
    expect(motd.clean_lines).toEqual(motd.clean === '' ? [] : motd.clean.split('\n'));
    expect(motd.raw_lines).toEqual(motd.raw === '' ? [] : motd.raw.split('\n'));
  });
});

describe('formatMotd against injection', () => {
  const INJECTIONS: [string, unknown][] = [
    ['markup in a string', '<script>alert("x")</script> & \'q\''],
    ['markup in a component', { text: '<img src=x onerror=alert(1)>' }],
    ['a quote in a colour', { text: 'x', color: 'red" onmouseover="alert(1)' }],
    ['CSS in a colour', { text: 'x', color: 'red;background:url(x)' }],
    ['an expression in a colour', { text: 'x', color: 'expression(alert(1))' }],
    ['a short hex colour', { text: 'x', color: '#f00' }],
    ['a colour that is not a string', { text: 'x', color: { toString: 'red' } }],
  ];

  it.each(INJECTIONS)('%s stays text', (_name, input) => {
    const { html } = formatMotd(input);
    expect(html).not.toMatch(/<(?!\/?span[ >])/); // no tag but <span> / </span>
    expect(html).not.toContain('background');
    expect(html).not.toContain('expression');
    expect(html).not.toContain('onmouseover="');
    for (const [, style] of html.matchAll(/style="([^"]*)"/g)) {
      expect(style).toMatch(/^(color: #[0-9a-f]{6}|font-weight: bold|font-style: italic|text-decoration: [a-z -]+)(; (color: #[0-9a-f]{6}|font-weight: bold|font-style: italic|text-decoration: [a-z -]+))*$/);
    }
  });

  it('escapes & < > " \' in text', () => {
    expect(formatMotd('<script>alert("x")</script> & \'q\'').html).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;',
    );
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });

  it('drops an invalid colour and keeps the parent colour', () => {
    const motd = formatMotd({ text: '', color: 'green', extra: [{ text: 'x', color: 'red;background:url(x)' }] });
    expect(motd.html).toBe('<span style="color: #55ff55">x</span>');
    expect(motd.raw).toBe('§ax');
  });
});

describe('formatMotd limits', () => {
  it('caps nesting depth at 32 levels', () => {
    let component: unknown = { text: 'deep' };
    for (let i = 0; i < 100; i++) component = { text: String(i % 10), extra: [component] };
    const { clean } = formatMotd(component);
    expect(clean).toHaveLength(33);
    expect(clean).not.toContain('deep');
  });

  it('does not overflow the stack on 10,000 nested arrays', () => {
    let component: unknown = 'end';
    for (let i = 0; i < 10_000; i++) component = [component];
    expect(formatMotd(component).clean).toBe('');
  });

  it('caps text at 64 Ki characters, strings and components alike', () => {
    expect(formatMotd('a'.repeat(200_000)).raw).toHaveLength(65_536);
    const wide = { text: '', extra: Array.from({ length: 5000 }, () => ({ text: 'b'.repeat(100) })) };
    expect(formatMotd(wide).clean).toHaveLength(65_536);
  });

  it('caps the number of component nodes', () => {
    const many = { text: '', extra: Array.from({ length: 100_000 }, () => 'c') };
    expect(formatMotd(many).clean.length).toBeLessThan(10_000);
  });
});

describe('cleanServerText', () => {
  it.each([
    ['§cPaper §l1.21', 256, 'Paper 1.21'],
    ['line\nbreak\r\n', 256, 'line break'],
    ['  padded  ', 256, 'padded'],
    ['a\u0000b\u001bc', 256, 'abc'],
    ['x'.repeat(300), 16, 'x'.repeat(16)],
    ['😀😀', 3, '😀'],
    [42, 256, '42'],
    [{ name: 'x' }, 256, ''],
    [undefined, 256, ''],
  ])('%j → %j', (input, max, expected) => {
    expect(cleanServerText(input, max)).toBe(expected);
  });
});

describe('ampersandToSection', () => {
  it.each([
    ['&aGreen &lBold &rReset', '§aGreen §lBold §rReset'],
    ['&A upper &K', '§a upper §k'],
    ['Fish & Chips &z &&a', 'Fish & Chips &z &§a'],
    ['&x&f&f&0&0&8&8hex', '§x§f§f§0§0§8§8hex'],
  ])('%s', (input, expected) => {
    expect(ampersandToSection(input)).toBe(expected);
  });
});
