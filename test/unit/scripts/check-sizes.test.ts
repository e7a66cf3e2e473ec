import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkSizes, FILE_LIMIT, FUNCTION_LIMIT, longFunctions } from '../../../scripts/check-sizes.js';

/** A body of `lines` lines: the braces and statements between them. */
const body = (lines: number) => `{\n${'  x++;\n'.repeat(lines - 2)}}`;

describe('check-sizes', () => {
  test('names each kind of function whose body spans over the limit, and only those', () => {
    const text = [
      `function long() ${body(FUNCTION_LIMIT + 1)}`,
      `function fits() ${body(FUNCTION_LIMIT)}`,
      `class Store {\n  method() ${body(FUNCTION_LIMIT + 1)}\n  field = () => ${body(FUNCTION_LIMIT + 1)};\n}`,
      `const arrow = () => ${body(FUNCTION_LIMIT + 2)};`,
      `const object = { property: function () ${body(FUNCTION_LIMIT + 1)} };`,
    ].join('\n');
    const found = longFunctions('a.ts', text).map(({ name, lines }) => ({ name, lines }));
    expect(found).toEqual([
      { name: 'long', lines: FUNCTION_LIMIT + 1 },
      { name: 'Store.method', lines: FUNCTION_LIMIT + 1 },
      { name: 'Store.field', lines: FUNCTION_LIMIT + 1 },
      { name: 'arrow', lines: FUNCTION_LIMIT + 2 },
      { name: 'property', lines: FUNCTION_LIMIT + 1 },
    ]);
  });

  describe('on a directory', () => {
    let root: string;
    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'check-sizes-'));
      await mkdir(join(root, 'src', 'deep'), { recursive: true });
      await writeFile(join(root, 'src', 'deep', 'big.ts'), 'const a = 1;\n'.repeat(FILE_LIMIT + 1));
      await writeFile(join(root, 'src', 'small.ts'), 'const a = 1;\n'.repeat(FILE_LIMIT));
      await writeFile(join(root, 'src', 'types.d.ts'), 'declare const a: number;\n'.repeat(FILE_LIMIT + 1));
    });
    afterAll(() => rm(root, { recursive: true, force: true }));

    test('lists the files over the limit, in subdirectories too, not declaration files', () => {
      expect(checkSizes(root, ['src'])).toEqual([{ file: join('src', 'deep', 'big.ts'), lines: FILE_LIMIT + 1 }]);
    });
  });
});
