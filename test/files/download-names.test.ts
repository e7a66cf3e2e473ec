// The filename a download offers (Content-Disposition): made from the element's `data.name` and the file's
// extension, with no character that changes how the name is displayed rather than what it says. A right-to-left
// override in `photo<U+202E>gpj.exe` shows it as `photoexe.jpg`; such characters (bidi controls, other control and
// format characters, line and paragraph separators) are dropped from both `filename` and `filename*`.
import contentDisposition from 'content-disposition';
import { beforeAll, describe, expect, it } from 'vitest';
import { attachFile, createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

/** Everything a displayed name must not contain. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

const BIDI_CONTROLS = [
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200e',
  '\u200f',
  '\u061c',
];

async function offeredName(h: Harness, id: string, token: string) {
  const res = await fetch(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  const header = res.headers.get('content-disposition')!;
  const { type, parameters } = contentDisposition.parse(header);
  expect(type).toBe('attachment');
  // `filename*` as a client reads it; the library's parse lets it win over `filename`, so the plain one is read
  // from the header text.
  const plain = /filename="((?:[^"\\]|\\.)*)"/.exec(header)?.[1]?.replace(/\\(.)/g, '$1');
  return { header, name: parameters.filename!, plain: plain ?? null };
}

describeBackends('download filenames', (h) => {
  let alice: User;
  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@download-names.dev');
  });

  async function elementWithFile(name: unknown, uploadedAs = 'picture.jpg') {
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { name } });
    await attachFile(h(), alice.token, id, Buffer.from('some bytes'), uploadedAs);
    return id;
  }

  it('drops a right-to-left override from a name in element data, in filename and filename*', async () => {
    const id = await elementWithFile('fotó\u202egpj.exe');
    const { header, name, plain } = await offeredName(h(), id, alice.token);
    expect(header).toBe(`attachment; filename="fot_gpj.exe.jpg"; filename*=UTF-8''fot%C3%B3gpj.exe.jpg`);
    expect(name).toBe('fotógpj.exe.jpg');
    expect(plain).toBe('fot_gpj.exe.jpg');
    // Stored as given: only the offered name is cleaned.
    const element = await h().request('GET', `/${id}`, { token: alice.token });
    expect(element.json.data.name).toBe('fotó\u202egpj.exe');
  });

  it('drops the right-to-left override from an ASCII name, which has no filename*', async () => {
    const id = await elementWithFile('photo\u202egpj.exe');
    const { header } = await offeredName(h(), id, alice.token);
    expect(header).toBe('attachment; filename="photogpj.exe.jpg"');
  });

  it('drops every bidi control, format character, control character and line or paragraph separator', async () => {
    const hidden = [
      ...BIDI_CONTROLS,
      '\u200b', // zero width space (Cf)
      '\u2060', // word joiner (Cf)
      '\ufeff', // byte order mark (Cf)
      '\u00ad', // soft hyphen (Cf)
      '\u0085', // next line (Cc)
      '\u009b', // control sequence introducer (Cc)
      '\u2028', // line separator (Zl)
      '\u2029', // paragraph separator (Zp)
      '\u{e0041}', // tag letter A (Cf, outside the BMP)
    ];
    const id = await elementWithFile(`R${hidden.join('')}é${hidden.join('S')}sumé`);
    const { name, plain, header } = await offeredName(h(), id, alice.token);
    expect(name).toBe(`Ré${'S'.repeat(hidden.length - 1)}sumé.jpg`);
    expect(plain).toBe(`R_${'S'.repeat(hidden.length - 1)}sum_.jpg`);
    expect(INVISIBLE.test(name)).toBe(false);
    expect(INVISIBLE.test(header)).toBe(false);
  });

  for (const [i, control] of BIDI_CONTROLS.entries())
    it(`drops bidi control U+${control.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`, async () => {
      const id = await elementWithFile(`Año${control}${i}`);
      const { name } = await offeredName(h(), id, alice.token);
      expect(name).toBe(`Año${i}.jpg`);
    });

  it('falls back to the element id when nothing but hidden characters is left', async () => {
    const id = await elementWithFile('\u202e\u2066\u200f \u2028');
    const { header } = await offeredName(h(), id, alice.token);
    expect(header).toBe(`attachment; filename="${id}.jpg"`);
  });

  it('keeps letters, digits, spaces, emoji and right-to-left scripts', async () => {
    const id = await elementWithFile('שלום 2024 🎉 مرحبا');
    const { name } = await offeredName(h(), id, alice.token);
    expect(name).toBe('שלום 2024 🎉 مرحبا.jpg');
  });

  describe('extensions', () => {
    it('an upload whose filename hides a bidi control before its extension gets no such extension', async () => {
      const id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'invoice' } });
      const res = await h().request('PUT', `/${id}/file`, {
        token: alice.token,
        raw: new Uint8Array(Buffer.from('MZ...')),
        headers: {
          'upload-complete': '?1',
          'content-disposition': `attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe`,
        },
      });
      expect(res.status).toBe(201);
      const element = await h().request('GET', `/${id}`, { token: alice.token });
      expect(element.json.file.extension).toBe('exe');
      const { header } = await offeredName(h(), id, alice.token);
      expect(header).toBe('attachment; filename="invoice.exe"');

      const hidden = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'invoice' } });
      const put = await h().request('PUT', `/${hidden}/file`, {
        token: alice.token,
        raw: new Uint8Array(Buffer.from('MZ...')),
        headers: {
          'upload-complete': '?1',
          'content-disposition': `attachment; filename*=UTF-8''invoice.%E2%80%AEexe`,
        },
      });
      expect(put.status).toBe(201);
      expect((await h().request('GET', `/${hidden}`, { token: alice.token })).json.file.extension).toBe('bin');
      expect((await offeredName(h(), hidden, alice.token)).header).toBe('attachment; filename="invoice.bin"');
    });

    it('an extension stored from elsewhere (a backup) with hidden characters is cleaned in the offered name', async () => {
      const id = await elementWithFile('report');
      // What a loaded backup may hold: the loader takes the extension as the backup states it.
      await h().db.query(
        `UPDATE elements SET file = jsonb_set(file, '{extension}', to_jsonb($2::text)) WHERE id = $1`,
        [id, 'p\u202edf\u2029'],
      );
      const { header, name } = await offeredName(h(), id, alice.token);
      expect(name).toBe('report.pdf');
      expect(header).toBe('attachment; filename="report.pdf"');
    });
  });
});
