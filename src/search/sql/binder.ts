// Bind parameters for the search statements (query DSL and Cypher): every client value reaches the SQL as a
// parameter, never as text.
import { unstorableAt, unstorableParameter } from '../../values.js';

export interface BinderOptions {
  /** The error for a value PostgreSQL cannot store (U+0000, an unpaired surrogate): the client's mistake, a 400. */
  unstorable: () => Error;
  /** Identical values of one type share one parameter. */
  share?: boolean;
}

/** Collects bind values; `bind` returns the placeholder with its cast. */
export class Binder {
  readonly values: unknown[];
  private readonly seen = new Map<string, string>();

  constructor(
    initial: readonly unknown[],
    private readonly options: BinderOptions,
  ) {
    this.values = [...initial];
  }

  bind(value: unknown, cast: string): string {
    if (unstorableParameter(value, cast)) throw this.options.unstorable();
    if (!this.options.share) return this.push(value, cast);
    const key = `${cast}|${JSON.stringify(value)}`;
    let ref = this.seen.get(key);
    if (ref === undefined) {
      ref = this.push(value, cast);
      this.seen.set(key, ref);
    }
    return ref;
  }

  /** A JSON value as jsonb; null (and undefined) as SQL NULL. */
  json(value: unknown): string {
    if (unstorableAt(value) !== null) throw this.options.unstorable();
    return this.bind(value === undefined || value === null ? null : JSON.stringify(value), 'jsonb');
  }

  /**
   * The statement and its values with the parameters it does not use left out (and the others renumbered; `$1` is
   * always kept): a value bound for a part of an expression that turned out constant is not referenced, and
   * PostgreSQL refuses a parameter whose type it cannot see ("could not determine data type of parameter").
   */
  finish(text: string): { text: string; values: unknown[] } {
    const used = new Set([...text.matchAll(/\$(\d+)::/g)].map((m) => Number(m[1])));
    used.add(1);
    if (used.size === this.values.length) return { text, values: this.values };
    const renumbered = new Map<number, number>();
    const values: unknown[] = [];
    this.values.forEach((value, i) => {
      if (!used.has(i + 1)) return;
      values.push(value);
      renumbered.set(i + 1, values.length);
    });
    return { text: text.replace(/\$(\d+)::/g, (_, n: string) => `$${renumbered.get(Number(n))}::`), values };
  }

  private push(value: unknown, cast: string): string {
    this.values.push(value);
    return `$${this.values.length}::${cast}`;
  }
}
