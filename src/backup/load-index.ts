// What a backup load learns in its pass over the element files (load.ts): an index of their ids and kinds, and what
// the steps after the pass need (users' identifiers and passwords, tokens and their owners, relations left pending).
import type { ParsedElement } from './element-file.js';
import { BackupError, type BackupTokenState } from './format.js';

const KIND_NODE = 0;
export const KIND_USER = 1;
const KIND_TOKEN = 2;
export const KIND_RELATION = 3;

interface TokenPlan {
  hash: string | null;
  state: BackupTokenState;
  issued: string | null;
  expires: string | null;
  owners: string[];
}

/** What the pass learns about the backup: an index of its ids and what the steps after the pass need. */
export interface Index {
  ids: string[];
  at: Map<string, number>;
  kind: Uint8Array;
  /** User element index -> the identifier stored in users (differs from data for shadowed duplicates). */
  identifiers: Map<number, string>;
  /** User element index -> its password hash, until the users rows are written. */
  passwords: Map<number, string | null>;
  tokens: Map<number, TokenPlan>;
  tokenHashes: Map<string, number>;
  /** Relations not written during the pass: attached to a relation, to an element of the database, or to nothing. */
  pending: Array<{ at: number; start: string; end: string }>;
  usedFiles: Set<string>;
}

export function newIndex(total: number): Index {
  return {
    ids: new Array<string>(total),
    at: new Map(),
    kind: new Uint8Array(total),
    identifiers: new Map(),
    passwords: new Map(),
    tokens: new Map(),
    tokenHashes: new Map(),
    pending: [],
    usedFiles: new Set(),
  };
}

/** The index as the pass fills it, element by element, in the order of `paths` (nodes first). */
export class PassIndex {
  /** Identifier -> the element index of the user who logs in with it. */
  private readonly identifierOwner = new Map<string, number>();

  constructor(
    private readonly index: Index,
    private readonly paths: string[],
    private readonly warn: (line: string) => void,
  ) {}

  /** Element `at`: its id (unique in the backup) and its kind. */
  add(at: number, el: ParsedElement, isRelation: boolean): void {
    const { ids, at: index, kind } = this.index;
    const seen = index.get(el.id);
    if (seen !== undefined)
      throw new BackupError(this.paths[at]!, `duplicate id ${el.id} (also in ${this.paths[seen]})`);
    index.set(el.id, at);
    ids[at] = el.id;
    kind[at] = isRelation
      ? KIND_RELATION
      : el.type === 'User'
        ? KIND_USER
        : el.type === 'Token'
          ? KIND_TOKEN
          : KIND_NODE;
  }

  /** A user's identifier and password hash. */
  noteIdentifier(at: number, el: ParsedElement): void {
    if (el.identifier === undefined) return;
    const { ids, identifiers, passwords } = this.index;
    passwords.set(at, el.passwordHash ?? null);
    // The identifier must be unique. The reference dataset repeats two; the smaller id keeps it for logging in,
    // the other user is stored under a substitute identifier (its tokens still work, its data is unchanged).
    const other = this.identifierOwner.get(el.identifier);
    if (other === undefined) {
      this.identifierOwner.set(el.identifier, at);
      identifiers.set(at, el.identifier);
      return;
    }
    const [keep, shadow] = ids[other]! < el.id ? [other, at] : [at, other];
    this.identifierOwner.set(el.identifier, keep);
    identifiers.set(keep, el.identifier);
    const substitute = `duplicate-identifier:${ids[shadow]}:${el.identifier}`;
    identifiers.set(shadow, substitute);
    this.warn(
      `${this.paths[shadow]}: identifier ${JSON.stringify(el.identifier)} is also used by ${this.paths[keep]}; this user logs in as ${JSON.stringify(substitute)}`,
    );
  }

  /** A token: its hash (unique in the backup) and state, its owners to come. */
  noteToken(at: number, el: ParsedElement): void {
    if (!el.token) return;
    const { tokens, tokenHashes } = this.index;
    if (el.token.hash !== null) {
      const other = tokenHashes.get(el.token.hash);
      if (other !== undefined) throw new BackupError(this.paths[at]!, `the same token hash as ${this.paths[other]}`);
      tokenHashes.set(el.token.hash, at);
    }
    tokens.set(at, {
      hash: el.token.hash,
      state: el.token.state,
      issued: el.created,
      expires: el.token.expires,
      owners: [],
    });
  }

  /**
   * A relation: notes a token's owner (OWNS from a user), and whether it is written in the pass (both ends are
   * nodes of the backup read already); otherwise it is left pending.
   */
  relationReady(at: number, el: ParsedElement): boolean {
    const { at: index, kind, tokens, pending } = this.index;
    const s = index.get(el.start!);
    const e = index.get(el.end!);
    if (el.type === 'OWNS' && e !== undefined && kind[e] === KIND_TOKEN && (s === undefined || kind[s] === KIND_USER))
      tokens.get(e)!.owners.push(el.start!);
    const endsAtNodes = s !== undefined && e !== undefined && kind[s] !== KIND_RELATION && kind[e] !== KIND_RELATION;
    if (!endsAtNodes) pending.push({ at, start: el.start!, end: el.end! });
    return endsAtNodes;
  }
}
