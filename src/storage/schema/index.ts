// The schema: the baseline (version 1) and the migrations after it, applied in order, each once (storage/migrate.ts).
// A change to a released schema is a new entry here (version 2, 3, ...) with its own SQL, never an edit of an
// applied one: a database records the versions it has and is not given them again.
import { ACCESS_EPOCH, ACCESS_INDEX, ACCESS_KEYS, ACCESS_RULES } from './access.js';
import { NORMALISED_IDENTIFIERS, REGISTRATION_COUNTS } from './accounts.js';
import { EVENTS, EVENTS_JOIN, EVENTS_STABLE } from './events.js';
import { PRINCIPAL_NAMES } from './principals.js';
import { RELATION_SEARCH_KEYS } from './relation-search-keys.js';
import { SEARCH_FUNCTIONS, SEARCH_INDEX } from './search.js';
import { DATA_LIMITS, EXTENSIONS, TABLES } from './tables.js';
import { UPLOAD_GENERATIONS } from './upload-generations.js';
import { WEBHOOKS } from './webhooks.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Everything, in dependency order: the search document's functions before the table whose column calls them. */
const BASELINE = [
  EXTENSIONS,
  SEARCH_FUNCTIONS,
  DATA_LIMITS,
  TABLES,
  ACCESS_INDEX,
  ACCESS_RULES,
  ACCESS_KEYS,
  ACCESS_EPOCH,
  SEARCH_INDEX,
].join('');

export const migrations: Migration[] = [
  { version: 1, name: 'baseline', sql: BASELINE },
  { version: 2, name: 'upload-generations', sql: UPLOAD_GENERATIONS },
  { version: 3, name: 'normalised-identifiers', sql: NORMALISED_IDENTIFIERS },
  { version: 4, name: 'registration-counts', sql: REGISTRATION_COUNTS },
  { version: 5, name: 'events', sql: EVENTS },
  { version: 6, name: 'principal-names', sql: PRINCIPAL_NAMES },
  { version: 7, name: 'relation-search-keys', sql: RELATION_SEARCH_KEYS },
  { version: 8, name: 'events-join', sql: EVENTS_JOIN },
  { version: 9, name: 'webhooks', sql: WEBHOOKS },
  { version: 10, name: 'events-stable', sql: EVENTS_STABLE },
];
