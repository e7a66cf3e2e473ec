// simple_query_string: Lucene's SimpleQueryParser syntax as Elasticsearch reads it, over `fields`. A word is a match
// on each field, `"…"` a match_phrase (`~N` its slop), `word*` a prefix, `word~N` a fuzzy match (at most 2 edits);
// `+` joins with AND, `|` with OR, whitespace with default_operator; `-` negates; `(` `)` group; `\` escapes.
// Like Elasticsearch it never refuses the syntax: an unclosed quote or bracket, a stray operator, are read as plain
// words or ignored. The combination is Lucene's: left to right, a change of operator wraps what came before, and a
// negated clause is "everything but it" (so `a -b` with the default OR also finds what has neither).
import { fold } from '../index/analysis.js';
import { MAX_DEPTH } from './limits.js';
import { fieldsOf } from './multi-match.js';
import type { DslField, DslQuery } from './query-dsl-types.js';
import {
  boolQuery,
  boostOf,
  describe,
  fail,
  isObject,
  type Json,
  onlyKeys,
  stringValue,
} from './query-dsl-validation.js';
import type { QueryBuilder } from './query-string.js';

type Occur = 'must' | 'should';

/** One clause as written: a word, a prefix, a phrase, or a group. */
type Leaf =
  | { k: 'word'; text: string; fuzzy: number }
  | { k: 'prefix'; text: string }
  | { k: 'phrase'; text: string; slop: number }
  | { k: 'group'; clauses: Parsed[] };

interface Parsed {
  /** How it joins what came before it (null: the default operator). */
  op: Occur | null;
  negated: boolean;
  leaf: Leaf;
}

const SPACE = /\s/;
/** Characters that end a word. */
const WORD_END = new Set(['"', '(', ')', '|', '+', '~']);

/** Reads the syntax leniently into clauses; never fails. */
class Reader {
  private i = 0;
  constructor(private readonly s: string) {}

  read(depth: number): Parsed[] {
    const out: Parsed[] = [];
    let op: Occur | null = null;
    let negated = false;
    while (this.i < this.s.length) {
      const c = this.s[this.i]!;
      if (SPACE.test(c)) this.i++;
      else if (c === '|' || c === '+') {
        // Only between clauses: a leading or doubled operator says nothing.
        if (out.length > 0) op = c === '|' ? 'should' : 'must';
        this.i++;
      } else if (c === '-') {
        negated = !negated;
        this.i++;
      } else if (c === ')') {
        this.i++;
        if (depth > 0) return out;
      } else {
        const leaf = this.leaf(c, depth);
        if (leaf !== null) out.push({ op, negated, leaf });
        op = null;
        negated = false;
      }
    }
    return out;
  }

  private leaf(c: string, depth: number): Leaf | null {
    if (c === '(') {
      this.i++;
      // Deeper than any query may nest: the bracket is ignored and what follows is read at this level.
      if (depth >= MAX_DEPTH) return null;
      return { k: 'group', clauses: this.read(depth + 1) };
    }
    if (c === '"') {
      const close = this.closingQuote(this.i + 1);
      if (close !== -1) {
        const text = unescaped(this.s.slice(this.i + 1, close));
        this.i = close + 1;
        return { k: 'phrase', text, slop: this.tilde() };
      }
      this.i++; // an unclosed quote: the words after it are plain words
      return null;
    }
    if (c === '~') {
      this.i++;
      this.tilde();
      return null;
    }
    let raw = '';
    while (this.i < this.s.length) {
      const d = this.s[this.i]!;
      if (d === '\\' && this.i + 1 < this.s.length) {
        raw += d + this.s[this.i + 1];
        this.i += 2;
        continue;
      }
      if (SPACE.test(d) || WORD_END.has(d)) break;
      raw += d;
      this.i++;
    }
    if (raw.endsWith('*') && !raw.endsWith('\\*')) return { k: 'prefix', text: unescaped(raw.replace(/\*+$/, '')) };
    const text = unescaped(raw);
    return text.length === 0 ? null : { k: 'word', text, fuzzy: Math.min(2, this.tilde()) };
  }

  /** A `~N` right here: N (0 for a bare `~` or none). */
  private tilde(): number {
    if (this.s[this.i] !== '~') return 0;
    this.i++;
    const m = /^\d{1,4}/.exec(this.s.slice(this.i));
    if (!m) return 0;
    this.i += m[0].length;
    return Number(m[0]);
  }

  private closingQuote(from: number): number {
    for (let j = from; j < this.s.length; j++) {
      if (this.s[j] === '\\') j++;
      else if (this.s[j] === '"') return j;
    }
    return -1;
  }
}

const unescaped = (raw: string) => raw.replace(/\\(.)/g, '$1');

export function simpleQueryString(builder: QueryBuilder, body: unknown, path: string): DslQuery {
  if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
  const o = body as Json;
  onlyKeys(o, path, ['query', 'fields', 'default_operator', 'analyze_wildcard', 'lenient', 'boost', '_name']);
  const text = stringValue(o.query, `${path}.query`);
  const fields = fieldsOf(o.fields, `${path}.fields`);
  for (const [i, { target }] of fields.entries())
    if (target.kind === 'id' || target.kind === 'date')
      fail(`${path}.fields[${i}]`, 'simple_query_string searches properties, not _id, created or updated');
  const operator = String(o.default_operator ?? 'or').toLowerCase();
  if (operator !== 'or' && operator !== 'and') fail(`${path}.default_operator`, "must be 'or' or 'and'");
  const boost = boostOf(o, path);
  const translate = new Translation(builder, fields, operator === 'and' ? 'must' : 'should', `${path}.query`);
  const query = translate.clauses(new Reader(text).read(0));
  return boost === 1 ? query : { k: 'boosted', factor: boost, query };
}

class Translation {
  constructor(
    private readonly builder: QueryBuilder,
    private readonly fields: Array<{ target: DslField; boost: number }>,
    private readonly defaultOccur: Occur,
    private readonly path: string,
  ) {}

  /** Lucene's buildQueryTree: left to right; a change of operator makes what came before one clause. */
  clauses(parsed: Parsed[]): DslQuery {
    let top: { occur: Occur | null; items: DslQuery[] } | null = null;
    for (const p of parsed) {
      let branch = this.leaf(p.leaf);
      if (branch === null) continue;
      if (p.negated) branch = boolQuery([], [], [{ k: 'all', boost: 1 }], [branch], undefined, 1, this.path);
      if (top === null) {
        top = { occur: null, items: [branch] };
        continue;
      }
      const occur = p.op ?? this.defaultOccur;
      if (top.occur !== null && top.occur !== occur) top = { occur, items: [this.combine(top)] };
      top = { occur, items: [...top.items, branch] };
    }
    if (top === null) return { k: 'none' };
    return this.combine(top);
  }

  private combine(top: { occur: Occur | null; items: DslQuery[] }): DslQuery {
    if (top.items.length === 1) return top.items[0]!;
    return top.occur === 'must'
      ? boolQuery(top.items, [], [], [], undefined, 1, this.path)
      : boolQuery([], [], top.items, [], undefined, 1, this.path);
  }

  private leaf(leaf: Leaf): DslQuery | null {
    if (leaf.k === 'group') {
      this.builder.countClauses(1, this.path);
      return this.clauses(leaf.clauses);
    }
    if (leaf.k === 'prefix' && leaf.text.length === 0) return { k: 'all', boost: 1 };
    // One clause per field; the fields of a word add up (Elasticsearch's tie_breaker 1 for this query).
    const perField = this.fields.map(({ target, boost }) => {
      this.builder.countClauses(1, this.path);
      if (leaf.k === 'prefix') {
        const pattern = target.kind === 'keyword' ? leaf.text : fold(leaf.text);
        return this.builder.patternOn(target, 'prefix', pattern, boost, false, this.path);
      }
      return this.builder.text(target, leaf.text, {
        operator: this.defaultOccur === 'must' ? 'and' : 'or',
        fuzziness: () => (leaf.k === 'word' ? leaf.fuzzy : 0),
        transpositions: true,
        prefixLength: 0,
        maxExpansions: 50,
        boost,
        zeroTerms: 'none',
        msm: undefined,
        at: this.path,
        ...(leaf.k === 'phrase' ? { phraseSlop: leaf.slop } : {}),
      });
    });
    return perField.length === 1 ? perField[0]! : boolQuery([], [], perField, [], undefined, 1, this.path);
  }
}
