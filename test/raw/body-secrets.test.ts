/**
 * Directory credentials kept out of the raw zone (docs/warehouse.md, "Raw zone"): found on
 * the parsed body, whatever the spelling of the key and the type of the value, and kept
 * out so that `has_site_credentials` derives from the kept body exactly as it did from
 * the one received.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listingSchema } from '../../src/api/listings.ts';
import { keptBody, withoutSecrets } from '../../src/raw/body.ts';
import {
  jsonEscapesDecoded,
  scannableText,
  secretLeaves,
  secretsFoundIn,
} from '../helpers/secret-scan.ts';

/** What a kept body holds in place of a credential string (docs/warehouse.md, "Raw zone"). */
const KEPT_OUT_MARKER = '[kept out of the raw zone]';
/** What it holds in place of a credential of any other type (the same section). */
const KEPT_OUT_VALUE = ['[kept out of the raw zone]'];

/** A listings answer with one listing whose entries are given as raw JSON text (`"key":value`). */
function listingsBody(...entries: string[]): string {
  return `{"success":true,"result":[{"id":701,${entries.join(',')},"site_name":"Yelp","status":"Accurate"}]}`;
}

/** The key written with every character as a `\uXXXX` escape, hex digits in `hexCase`. */
function fullyEscaped(name: string, hexCase: 'lower' | 'upper' = 'lower'): string {
  return [...name]
    .map((c) => {
      const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${hexCase === 'upper' ? hex.toUpperCase() : hex}`;
    })
    .join('');
}

/** The first listing of a kept listings body, parsed. */
function keptListing(text: string): Record<string, unknown> {
  const body = JSON.parse(withoutSecrets(text)) as { result: Record<string, unknown>[] };
  return body.result[0] as Record<string, unknown>;
}

describe('withoutSecrets: a key that parses to a directory credential', () => {
  const spellings: [string, string, 'site_username' | 'site_password'][] = [
    ['an escaped underscore', 'site\\u005fpassword', 'site_password'],
    ['an escaped underscore, upper-case hex', 'site\\u005Fpassword', 'site_password'],
    ['an escaped first letter', '\\u0073ite_username', 'site_username'],
    ['an escape in the middle', 'sit\\u0065_pass\\u0077ord', 'site_password'],
    ['every character escaped', fullyEscaped('site_password'), 'site_password'],
    [
      'every character escaped, upper-case hex',
      fullyEscaped('site_username', 'upper'),
      'site_username',
    ],
  ];
  it.each(spellings)('is kept out when written with %s', (_name, key, parsedAs) => {
    const text = listingsBody(`"${key}":"zz-escaped-secret"`);
    // The premise: JSON reads the key as the credential's name.
    expect(Object.keys((JSON.parse(text) as { result: object[] }).result[0] ?? {})).toContain(
      parsedAs,
    );
    const kept = withoutSecrets(text);
    expect(secretsFoundIn(kept, ['zz-escaped-secret'])).toEqual([]);
    expect(keptListing(text)[parsedAs]).toBe(KEPT_OUT_MARKER);
  });

  it('is kept out with any one of its characters escaped, in either hex case', () => {
    for (const name of ['site_username', 'site_password'] as const) {
      for (let at = 0; at < name.length; at++) {
        for (const upper of [false, true]) {
          const hex = name.charCodeAt(at).toString(16).padStart(4, '0');
          const key = `${name.slice(0, at)}\\u${upper ? hex.toUpperCase() : hex}${name.slice(at + 1)}`;
          const text = listingsBody(`"${key}":"zz-one-escape"`);
          expect(withoutSecrets(text), key).not.toContain('zz-one-escape');
          expect(keptListing(text)[name]).toBe(KEPT_OUT_MARKER);
        }
      }
    }
  });

  it('is kept out however its characters are escaped (any mix, any hex case)', () => {
    const spelling = (name: string) =>
      fc
        .tuple(
          ...[...name].map((c) =>
            fc.constantFrom(
              c,
              `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
              `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`,
            ),
          ),
        )
        .map((parts) => parts.join(''));
    fc.assert(
      fc.property(
        fc
          .constantFrom('site_username', 'site_password')
          .chain((name) => fc.tuple(fc.constant(name), spelling(name))),
        ([name, key]) => {
          const text = listingsBody(`"${key}":"zz-any-spelling"`);
          expect(withoutSecrets(text)).not.toContain('zz-any-spelling');
          expect(keptListing(text)[name]).toBe(KEPT_OUT_MARKER);
        },
      ),
    );
  });

  it('is kept out at any depth, in any object', () => {
    const text = `{"success":true,"result":{"a":[[{"b":{"c":[{"site\\u005fpassword":"zz-deep-1"}]}}]],"site_username":{"site_password":"zz-deep-2"}}}`;
    const kept = withoutSecrets(text);
    expect(secretsFoundIn(kept, ['zz-deep-1', 'zz-deep-2'])).toEqual([]);
    const parsed = JSON.parse(kept) as { result: { a: { b: { c: object[] } }[][] } & object };
    expect(parsed.result.a[0]?.[0]?.b.c[0]).toEqual({ site_password: KEPT_OUT_MARKER });
    expect(parsed.result).toHaveProperty('site_username', KEPT_OUT_VALUE);
  });

  it('is kept out when the key is written twice: the first value is in the text only', () => {
    // JSON.parse keeps the last value (blank here); the first must not stay in the text.
    const text = listingsBody('"site\\u005fpassword":"zz-first-copy"', '"site_password":""');
    const kept = withoutSecrets(text);
    expect(kept).not.toContain('zz-first-copy');
    expect(keptListing(text)['site_password']).toBe('');
  });
});

describe('withoutSecrets: a directory credential of any type', () => {
  const values: [string, unknown][] = [
    ['a number', 8675309],
    ['a negative fraction', -12.5e3],
    ['an array', ['zz-array-secret', 42, { inner: 'zz-array-inner' }]],
    ['an empty array', []],
    ['an object', { login: 'zz-object-login', nested: { password: ['zz-object-pw'] } }],
    ['an empty object', {}],
    ['true', true],
    ['false', false],
  ];
  it.each(values)('%s is replaced by KEPT_OUT_VALUE', (_name, value) => {
    for (const key of ['site_password', 'site_username', 'site\\u005fpassword']) {
      const text = listingsBody(`"${key}":${JSON.stringify(value)}`);
      const kept = withoutSecrets(text);
      expect(secretsFoundIn(kept, secretLeaves(value))).toEqual([]);
      expect(keptListing(text)[key.replace('\\u005f', '_')]).toEqual(KEPT_OUT_VALUE);
    }
  });

  it('a non-blank string is replaced by KEPT_OUT_MARKER, even one written in escapes', () => {
    const text = listingsBody(
      '"site_password":"\\u007a\\u007a-escaped-value"',
      '"site_username":"zz-login"',
    );
    const kept = withoutSecrets(text);
    expect(secretsFoundIn(kept, ['zz-escaped-value', 'zz-login'])).toEqual([]);
    expect(keptListing(text)).toMatchObject({
      site_password: KEPT_OUT_MARKER,
      site_username: KEPT_OUT_MARKER,
    });
  });

  it.each([
    ['empty', ''],
    ['spaces', '   '],
    ['tabs and newlines', '\t\n\r '],
    ['a no-break space', '\u00a0'],
    ['a byte-order mark', '\ufeff'],
  ])('a blank string (%s) stays blank, as does null', (_name, blank) => {
    const text = listingsBody(
      `"site_username":${JSON.stringify(blank)}`,
      `"site\\u005fpassword":null`,
    );
    expect(keptListing(text)).toMatchObject({ site_username: blank, site_password: null });
  });
});

describe('withoutSecrets: what else of the body is kept', () => {
  it('keeps a body without any credential key byte for byte, escapes and spacing included', () => {
    const reviews =
      '{ "success": true, "result": {"Yelp": [{"id": "r1", "content": "Caf\\u00e9 \\/ \\"ok\\"", "site_name": "Yelp", "rating": 5.0}]} }';
    expect(withoutSecrets(reviews)).toBe(reviews);
    const html =
      '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>site_name \\u</body>\r\n</html>\r\n';
    expect(withoutSecrets(html)).toBe(html);
  });

  it('keeps a compact body whose credentials hold nothing byte for byte', () => {
    const text = listingsBody('"site_username":null', '"site_password":""');
    expect(withoutSecrets(text)).toBe(text);
  });

  it('re-serialises a body that holds a credential key (JSON.stringify of the masked value)', () => {
    const text = `{\n  "success": true,\n  "result": [{"id": 1, "site_password": "zz-pretty", "live_link": "https:\\/\\/x.example\\/a"}]\n}`;
    expect(withoutSecrets(text)).toBe(
      `{"success":true,"result":[{"id":1,"site_password":${JSON.stringify(KEPT_OUT_MARKER)},"live_link":"https://x.example/a"}]}`,
    );
  });

  it('still replaces the credential token and e-mail, after the directory credentials', () => {
    const text = listingsBody('"site\\u005fpassword":"zz-pw"', '"note":"tok-123 for a@b.example"');
    const kept = withoutSecrets(text, ['tok-123', 'a@b.example']);
    expect(secretsFoundIn(kept, ['zz-pw', 'tok-123', 'a@b.example'])).toEqual([]);
    const [listing] = (JSON.parse(kept) as { result: Record<string, unknown>[] }).result;
    expect(listing?.['note']).toBe(`${KEPT_OUT_MARKER} for ${KEPT_OUT_MARKER}`);
  });

  it('gives keptBody the same masked text and hash for both users of a response', () => {
    const text = listingsBody('"\\u0073ite_password":["zz-kept-twice"]');
    const first = keptBody(text, ['tok']);
    expect(keptBody(text, ['tok'])).toEqual(first);
    expect(first.text).not.toContain('zz-kept-twice');
  });
});

describe('withoutSecrets: a text that does not parse', () => {
  it('keeps out every credential it can read there, escaped keys and structured values too', () => {
    // A cut-off answer: JSON.parse refuses it, and the text rule applies.
    const cut = `{"success":true,"result":[{"id":1,"site\\u005fpassword":"zz-cut-1","site_username":["zz-cut-2",{"k":"zz-cut-3]}"}]},{"id":2,"${fullyEscaped('site_username')}" : 31415926535,"site_password":"  "},{"id":3,"site_password":{"a":["zz-cut-4"`;
    expect(() => JSON.parse(cut)).toThrow();
    const kept = withoutSecrets(cut);
    expect(
      secretsFoundIn(kept, ['zz-cut-1', 'zz-cut-2', 'zz-cut-3', 'zz-cut-4', 31415926535]),
    ).toEqual([]);
    // What is not a credential stays as received; a blank value stays blank.
    expect(kept).toContain('{"success":true,"result":[{"id":1,"site\\u005fpassword":');
    expect(kept).toContain('"site_password":"  "},{"id":3,');
    expect(kept).toContain(KEPT_OUT_MARKER);
  });
});

describe('has_site_credentials derives from the kept body as from the received one', () => {
  const listing = (credentials: Record<string, unknown>) =>
    JSON.stringify({
      success: true,
      result: [{ id: 9, ...credentials, site_name: 'Google', status: 'Not Present' }],
    });
  const derived = (text: string) =>
    listingSchema.parse((JSON.parse(text) as { result: unknown[] }).result[0]).hasSiteCredentials;

  it.each<[string, unknown, boolean]>([
    ['a non-blank string', 'zz-login', true],
    ['a blank string', ' \n', false],
    ['null', null, false],
    ['a number', 12345, false],
    ['zero', 0, false],
    ['true', true, false],
    ['an array of strings', ['zz-a'], false],
    ['an object', { user: 'zz-u' }, false],
  ])('for %s', (_name, value, expected) => {
    for (const credentials of [
      { site_username: value },
      { site_password: value },
      { site_username: value, site_password: null },
    ]) {
      const text = listing(credentials);
      expect(derived(text)).toBe(expected);
      expect(derived(withoutSecrets(text))).toBe(expected);
    }
  });

  it('for any JSON values, present or absent, under keys however escaped', () => {
    const blank = fc.constantFrom('', ' ', '\t', '\n', '\u00a0', '\u2003', '\ufeff', '\u3000');
    const credential = fc.option(
      fc.oneof(
        fc.jsonValue(),
        blank,
        fc.string().map((s) => ` ${s} `),
      ),
      { nil: undefined },
    );
    fc.assert(
      fc.property(credential, credential, fc.boolean(), (username, password, escapeKeys) => {
        const credentials: Record<string, unknown> = {};
        if (username !== undefined) credentials['site_username'] = username;
        if (password !== undefined) credentials['site_password'] = password;
        let text = listing(credentials);
        if (escapeKeys) text = text.replace(/"site_(username|password)":/g, '"site\\u005f$1":');
        const kept = withoutSecrets(text);
        expect(derived(kept)).toBe(derived(text));
        // Kept once is kept for good: a kept body kept again is the same text (and hash).
        expect(withoutSecrets(kept)).toBe(kept);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the secret scan (test/helpers/secret-scan.ts)', () => {
  it('finds a secret written with JSON escapes, and inside JSON inside JSON', () => {
    expect(jsonEscapesDecoded('"\\u0068unter2 \\"q\\" \\\\u0041"')).toBe('"hunter2 "q" \\u0041"');
    const row = JSON.stringify({ body: '{"site_password":"\\u0068unter2"}' });
    expect(row).not.toContain('hunter2');
    expect(scannableText(row)).toContain('hunter2');
    expect(secretsFoundIn(row, ['hunter2'])).toEqual(['hunter2']);
  });

  it('looks for every string and number a structured secret holds', () => {
    expect(secretLeaves(['a', 7, { b: ['c', true, null], d: 2.5 }])).toEqual([
      'a',
      '7',
      'c',
      '2.5',
    ]);
    expect(secretsFoundIn('{"x":[1,"c"]}', [{ deep: ['c', 'z'] }])).toEqual(['c']);
  });
});
