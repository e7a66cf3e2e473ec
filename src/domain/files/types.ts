/** The metadata of an element's file, as stored with the element and rendered in its representation. */
export interface FileMeta {
  contentLength: number;
  extension: string;
  mimeType: string;
  hash: { sha256: string | null };
}

/** What file operations read of their element (as Elements.require hands it over). */
export interface FileTarget {
  id: string;
  data: Record<string, unknown>;
  file: FileMeta | null;
  updated: Date;
}
