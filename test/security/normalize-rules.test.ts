/**
 * The path normaliser's rules at their edges (core/http/normalize.ts, #30): every guard reads the
 * path it returns, so a wrong boundary in it is a way around them. Each character class is tested
 * with its neighbours in ASCII (the characters just outside a range are the wrong rule's answer),
 * and each structural rule with the input that looks like it but is not.
 */
import { describe, expect, it } from 'vitest';
import { hasEncodedControl, normalizeUrl } from '../../core/http/normalize.js';

const hex = (code: number) => `%${code.toString(16).toUpperCase().padStart(2, '0')}`;

describe('percent-encodings', () => {
  it('decodes exactly the unreserved characters, in upper- or lower-case hex', () => {
    const unreserved = 'AZaz09-._~';
    for (const c of unreserved) {
      const code = c.charCodeAt(0);
      expect(normalizeUrl(`/a${hex(code)}b`), c).toBe(c === '.' ? '/a.b' : `/a${c}b`);
      expect(normalizeUrl(`/a${hex(code).toLowerCase()}b`), c).toBe(`/a${c}b`);
    }
    // The neighbours of each range, and the punctuation next to the unreserved marks, stay encoded.
    for (const code of [0x40, 0x5b, 0x60, 0x7b, 0x2f, 0x3a, 0x2c, 0x2b, 0x5e, 0x7d, 0x7f, 0x20, 0x25]) {
      expect(normalizeUrl(`/a${hex(code)}b`), hex(code)).toBe(`/a${hex(code)}b`);
    }
  });

  it('upper-cases the hex it keeps, every digit of it', () => {
    expect(normalizeUrl('/a%2fb%3ac%5bd%7be')).toBe('/a%2Fb%3Ac%5Bd%7Be');
    expect(normalizeUrl('/x%af%bf%cf%df%ef%ff')).toBe('/x%AF%BF%CF%DF%EF%FF');
    expect(normalizeUrl('/x%a0%b9%c0%d5%e8%f1')).toBe('/x%A0%B9%C0%D5%E8%F1');
  });

  it('leaves what is not an escape as it is: a bad digit on either side, a % at the end', () => {
    // Digits just outside 0-9, A-F and a-f: '/', ':', '@', 'G', '`', 'g' ('/' only first: it ends a segment).
    for (const bad of ['%/1', '%:1', '%@1', '%G1', '%`1', '%g1', '%1:', '%1@', '%1G', '%1`', '%1g', '%', '%4']) {
      expect(normalizeUrl(`/p${bad}`), bad).toBe(`/p${bad}`);
    }
    // After a bad one the next escape is still read, and the text between is kept.
    expect(normalizeUrl('/p%zz%41-%4')).toBe('/p%zzA-%4');
    expect(normalizeUrl('/p%%41')).toBe('/p%A');
    // Escapes back to back, and text before, between and after them.
    expect(normalizeUrl('/x%41%42y%43z')).toBe('/xAByCz');
    expect(normalizeUrl('/%41')).toBe('/A');
  });

  it('reads an escape only at a %: hex digits before one are text', () => {
    expect(normalizeUrl('/a12%41')).toBe('/a12A');
    expect(normalizeUrl('/12%7e')).toBe('/12~');
  });

  it('decodes an escape once: an encoded % is not read again', () => {
    expect(normalizeUrl('/a%2541')).toBe('/a%2541');
    expect(normalizeUrl('/a%252e%252e/b')).toBe('/a%252e%252e/b');
    expect(normalizeUrl('/a/%252e%252e')).toBe('/a/%252e%252e');
  });
});

describe('segments', () => {
  it('resolves dot segments, plain and encoded, never above the root; a dotted name is a name', () => {
    expect(normalizeUrl('/a/./b')).toBe('/a/b');
    expect(normalizeUrl('/a/%2E/b')).toBe('/a/b');
    expect(normalizeUrl('/a/b/../c')).toBe('/a/c');
    expect(normalizeUrl('/a/b/%2e./c')).toBe('/a/c');
    expect(normalizeUrl('/a/..')).toBe('/');
    expect(normalizeUrl('/..')).toBe('/');
    // Near misses: three dots, a dot in a name, a leading dot.
    expect(normalizeUrl('/a/.../b')).toBe('/a/.../b');
    expect(normalizeUrl('/a/..b/c')).toBe('/a/..b/c');
    expect(normalizeUrl('/a/.well-known/x')).toBe('/a/.well-known/x');
    expect(normalizeUrl('/a/b./c')).toBe('/a/b./c');
  });

  it('drops empty segments and the trailing slash, but keeps the root', () => {
    expect(normalizeUrl('/a//b')).toBe('/a/b');
    expect(normalizeUrl('/a/b/')).toBe('/a/b');
    expect(normalizeUrl('///')).toBe('/');
    expect(normalizeUrl('/')).toBe('/');
  });
});

describe('the query', () => {
  it('is kept exactly as sent, and does not by itself send the path to the slow path', () => {
    expect(normalizeUrl('/a/?q=%41//./')).toBe('/a?q=%41//./');
    expect(normalizeUrl('/a%41?x=%2e%2e')).toBe('/aA?x=%2e%2e');
    // Nothing in the path needs work: the very same string comes back (the fast path).
    const url = '/api/v1/agents?x=%41&y=//z/';
    expect(normalizeUrl(url)).toBe(url);
    expect(normalizeUrl('/a?')).toBe('/a?');
    expect(normalizeUrl('/a/?')).toBe('/a?');
  });

  it('reads the first ? as the start of the query', () => {
    expect(normalizeUrl('/a/./b?c=/./?d')).toBe('/a/b?c=/./?d');
  });

  it('leaves a target that is not an absolute path as sent: OPTIONS *, a query alone, a relative form', () => {
    expect(normalizeUrl('*')).toBe('*');
    expect(normalizeUrl('?a=/./')).toBe('?a=/./');
    expect(normalizeUrl('a/b')).toBe('a/b');
  });
});

describe('encoded control characters', () => {
  it('are found from %00 to %1F and %7F, in a path that has a %; their neighbours are not', () => {
    for (const code of [0x00, 0x01, 0x09, 0x0a, 0x0f, 0x10, 0x1f, 0x7f]) expect(hasEncodedControl(`/a${hex(code)}b`), hex(code)).toBe(true);
    for (const code of [0x20, 0x2f, 0x7e, 0x80, 0x3f]) expect(hasEncodedControl(`/a${hex(code)}b`), hex(code)).toBe(false);
    expect(hasEncodedControl('/a/b')).toBe(false);
    expect(hasEncodedControl('%0A')).toBe(true);
    expect(hasEncodedControl('/a/01/1F')).toBe(false);
    // As normalizeUrl leaves it: a lower-case escape was upper-cased first.
    expect(hasEncodedControl(normalizeUrl('/a%0ab'))).toBe(true);
  });
});
