// The JSON body parser: Fastify's own (prototype poisoning refused), plus a 400 before any handler runs for what
// PostgreSQL cannot store and would answer with a 500: U+0000, an unpaired surrogate, a number JSON.parse made
// infinite (1e400), and nesting deeper than MAX_JSON_DEPTH (serialising it for the database overflows the stack).
// The first two can only be written as \u escapes in JSON text, so an ordinary body pays for a scan of its text, not
// a walk of its value.
import type { FastifyInstance } from 'fastify';
import { Problem } from '../errors.js';
import { unstorableAt } from '../values.js';

const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;
const HUGE_NUMBER = /\d[eE]\+?\d{3}|\d{309}/;
/** Whether the body may hold what unstorableAt looks for (cheap tests first, so an ordinary body costs little). */
const suspect = (text: string) => (text.includes('\\u') && SUSPECT_ESCAPE.test(text)) || HUGE_NUMBER.test(text);

/** Levels of arrays and objects a JSON body may nest. */
export const MAX_JSON_DEPTH = 256;

/** Does the JSON text nest arrays and objects more than `max` levels deep? (Brackets inside strings do not count.) */
export function nestsDeeperThan(text: string, max: number): boolean {
  // Nesting deeper than `max` needs more than `max` opening brackets: counted with indexOf (native), so the character
  // loop below, several times the cost of JSON.parse itself, runs only for the rare body that has that many.
  if (text.length <= 2 * max || !moreOpeningBracketsThan(text, max)) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

function moreOpeningBracketsThan(text: string, max: number): boolean {
  let n = 0;
  for (const bracket of ['[', '{'])
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) if (++n > max) return true;
  return false;
}

/** Replaces the application/json parser of `app` (before routes are registered, so that every context inherits it). */
export function installJsonBodyParser(app: FastifyInstance, bodyLimit: number): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    const text = body as string;
    if (nestsDeeperThan(text, MAX_JSON_DEPTH))
      return done(
        new Problem(
          'bad-content',
          `Malformed request body: it nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`,
        ),
        undefined,
      );
    parseJson(request, text, (error, value) => {
      if (error) return done(error, undefined);
      const at = suspect(text) ? unstorableAt(value) : null;
      if (at !== null)
        return done(
          new Problem(
            'bad-content',
            `Malformed request body: the value at ${at} cannot be stored (U+0000, an unpaired surrogate, or a number beyond the double range).`,
          ),
          undefined,
        );
      done(null, value);
    });
  });
}
