// RFC 7239's Forwarded as src/http/forwarded.ts reads it: the grammar (tokens, quoted strings, several elements and
// header lines), and refusals of what does not follow it. The trusted-hop rule over real sockets, behind nginx, is
// test/http/reverse-proxy.test.ts.
import { describe, expect, it } from 'vitest';
import { parseForwarded } from '../../../src/http/forwarded.js';

describe('parseForwarded', () => {
  it('reads elements of pairs, tokens and quoted strings, in any case of the names', () => {
    expect(parseForwarded('for=192.0.2.60;proto=http;by=203.0.113.43')).toEqual([
      { for: '192.0.2.60', proto: 'http', host: undefined },
    ]);
    expect(parseForwarded('For="[2001:db8:cafe::17]:4711"')).toEqual([
      { for: '[2001:db8:cafe::17]:4711', proto: undefined, host: undefined },
    ]);
    // Two header lines, as Node joins them, with optional whitespace around the separators.
    expect(parseForwarded('for=192.0.2.43 , for="[2001:db8:cafe::17]" ;host="a.example:8443";proto=https')).toEqual([
      { for: '192.0.2.43', proto: undefined, host: undefined },
      { for: '[2001:db8:cafe::17]', proto: 'https', host: 'a.example:8443' },
    ]);
    expect(parseForwarded('for=unknown, for=_hidden')).toEqual([
      { for: 'unknown', proto: undefined, host: undefined },
      { for: '_hidden', proto: undefined, host: undefined },
    ]);
    expect(parseForwarded('host="a\\"b"')).toEqual([{ for: undefined, proto: undefined, host: 'a"b' }]);
  });

  it('refuses what does not follow the grammar', () => {
    for (const header of [
      '',
      ', for=192.0.2.1',
      'for=192.0.2.1,',
      'for=[2001:db8::1]',
      'for = 192.0.2.1',
      'for="192.0.2.1',
      'for=192.0.2.1;for=192.0.2.2',
      'for',
      'for=192.0.2.1 proto=http',
    ])
      expect(parseForwarded(header), header).toBeNull();
  });
});
