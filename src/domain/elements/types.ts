// The vocabulary of elements that storage shares with the domain.

/** What a caller may do on an element (docs/architecture.md, "Access model"). */
export type Permission = 'READ' | 'SEARCH' | 'CREATE' | 'UPDATE' | 'DELETE';

/** The collection endpoints: GET /, GET /<id>/parents, /children and /related. */
export type CollectionKind = 'index' | 'parents' | 'children' | 'related';
