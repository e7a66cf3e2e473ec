// The `Allow` of a 200 or 304 to GET and HEAD of an element or its file: the methods this caller may use there,
// decided in the statement that reads the element (docs/guide.md, "Share with a user and with a group"). It says no more than
// trying each method would: a method that is left out answers 404 to this caller, as a missing element does.

/** `/<id>`: PUT and PATCH need UPDATE, DELETE needs DELETE (never offered on a User node, which answers 403). */
export function elementAllow(writes: { update: boolean; delete: boolean }): string {
  return ['GET', 'HEAD', ...(writes.update ? ['PUT', 'PATCH'] : []), ...(writes.delete ? ['DELETE'] : [])].join(', ');
}

/** `/<id>/file`: every write of a file (POST, PUT, DELETE) needs UPDATE on its element. */
export function fileAllow(mayUpdate: boolean): string {
  return mayUpdate ? 'GET, HEAD, POST, PUT, DELETE' : 'GET, HEAD';
}
