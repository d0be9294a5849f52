// MLIR line lexer: one line of module text -> [kind, text] tokens covering it exactly (the rules of
// reactant_lab.analysis.lexer, so the explorer and the editors colour IR as the report does).

export type TokenKind =
  | 'op'
  | 'dialect'
  | 'ssa'
  | 'block'
  | 'symbol'
  | 'type'
  | 'attr'
  | 'key'
  | 'kw'
  | 'str'
  | 'num'
  | 'comment'
  | 'loc'
  | 'magic'
  | 'text';

export type Token = [TokenKind, string];

/** CSS class per token kind (the report's classes, reactant_lab.render.highlight.CLASSES). */
export const TOKEN_CLASSES: Readonly<Record<TokenKind, string>> = {
  op: 'o',
  dialect: 'd',
  ssa: 'v',
  block: 'b',
  symbol: 's',
  type: 't',
  attr: 'a',
  key: 'k',
  kw: 'w',
  str: 'q',
  num: 'n',
  comment: 'c',
  loc: 'l',
  magic: 'c',
  text: ''
};

const STR = '"(?:[^"\\\\]|\\\\.)*"';
const ANG0 = `(?:[^<>"-]+|->|-|${STR})*`;
const ANG = `<(?:[^<>"-]+|->|-|${STR}|<(?:[^<>"-]+|->|-|${STR}|<${ANG0}>)*>)*>`;
const PAREN =
  `\\((?:[^()"]+|${STR}|\\((?:[^()"]+|${STR}|\\((?:[^()"]+|${STR})*\\))*\\))*\\)`;
const TOKEN = new RegExp(
  [
    '(?<comment>//.*)',
    `(?<str>${STR}|"(?:[^"\\\\]|\\\\.)*)`,
    '(?<ssa>%[A-Za-z0-9$._-]+)',
    '(?<block>\\^[A-Za-z0-9$._-]+)',
    `(?<symbol>@(?:${STR}|[A-Za-z0-9$._-]+))`,
    `(?<attr>#[A-Za-z_][\\w$.]*(?:${ANG})?)`,
    `(?<loc>loc${PAREN})`,
    `(?<word>!?[A-Za-z_][\\w$.]*(?:${ANG})?)`,
    '(?<num>-?0x[0-9A-Fa-f]+|-?\\d+(?:\\.\\d*)?(?:[eE][+-]?\\d+)?)',
    '(?<text>[^"%^@#!A-Za-z_0-9/-]+|[\\s\\S])'
  ].join('|'),
  'gy'
);
const SCALAR_TYPE = /^(?:[su]?i\d+|f\d+(?:E\d+M\d+\w*)?|bf16|tf32|index|none)$/;
const KEYWORDS = new Set([
  'dense',
  'array',
  'attributes',
  'public',
  'private',
  'nested',
  'affine_map',
  'true',
  'false',
  'unit',
  'module',
  'dense_resource',
  'sparse',
  'x'
]);
const ATTR_WORDS = ['dense<', 'array<', 'affine_map<', 'sparse<', 'dense_resource<', 'affine_set<'];
const OP_NAME = /^[A-Za-z_][\w$]*(?:\.[\w$]+)+$/;
const OP_SLOT = /^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?(?=")/;
const MAGIC = /^%%[A-Za-z_]\w*/;
// A word followed by '=' (not '==') is an attribute or keyword-argument name. (A lookahead in an
// optional group of TOKEN would never count as matched in JavaScript: it matches empty.)
const KEY_AFTER = /\s*=(?!=)/y;

function classifyWord(word: string, isKey: boolean): Token[] {
  if (isKey) {
    return [['key', word]];
  }
  if (word.endsWith('>')) {
    return [[ATTR_WORDS.some(p => word.startsWith(p)) ? 'attr' : 'type', word]];
  }
  if (word.startsWith('!') || SCALAR_TYPE.test(word)) {
    return [['type', word]];
  }
  const dot = word.indexOf('.');
  if (dot >= 0) {
    return [
      ['dialect', word.slice(0, dot + 1)],
      ['op', word.slice(dot + 1)]
    ];
  }
  if (word === 'return') {
    return [['op', word]];
  }
  return [[KEYWORDS.has(word) ? 'kw' : 'text', word]];
}

/** Tokens of one line; their texts joined give the line back. A cell-magic line (`%%name ...`)
 * starts with a `magic` token. */
export function tokenizeLine(line: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  const magic = MAGIC.exec(line);
  if (magic) {
    tokens.push(['magic', magic[0]]);
    pos = magic[0].length;
  }
  const slot = line.includes('"') ? OP_SLOT.exec(line) : null;
  const opSlot = slot ? slot[0].length : -1;
  TOKEN.lastIndex = pos;
  while (pos < line.length) {
    const m = TOKEN.exec(line);
    if (!m || !m.groups) {
      tokens.push(['text', line.slice(pos)]);
      break;
    }
    const text = m[0];
    const g = m.groups;
    if (g.word !== undefined) {
      KEY_AFTER.lastIndex = TOKEN.lastIndex;
      tokens.push(...classifyWord(g.word, KEY_AFTER.test(line)));
    } else if (g.str !== undefined && m.index === opSlot && OP_NAME.test(text.slice(1, -1))) {
      const dot = text.indexOf('.');
      tokens.push(
        ['text', '"'],
        ['dialect', text.slice(1, dot + 1)],
        ['op', text.slice(dot + 1, -1)],
        ['text', '"']
      );
    } else {
      const kind = Object.keys(g).find(k => g[k] !== undefined) as TokenKind;
      tokens.push([kind, text]);
    }
    pos = TOKEN.lastIndex;
    if (text.length === 0) {
      TOKEN.lastIndex = ++pos;
    }
  }
  return tokens;
}
