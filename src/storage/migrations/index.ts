// Numbered migrations, applied in order, each once. Add a file, never edit an applied one.
import elements from './001-elements.js';
import accounts from './002-accounts.js';
import uploads from './003-uploads.js';
import access from './004-access.js';
import accessIndex from './005-access-index.js';
import searchIndex from './006-search-index.js';
import searchDocument from './007-search-document.js';
import dropTypeIndex from './008-drop-type-index.js';
import searchFieldBackslash from './009-search-field-backslash.js';
import searchFuzzyAnyField from './010-search-fuzzy-any-field.js';
import relationWritesNeedRead from './011-relation-writes-need-read.js';
import uploadPreconditions from './012-upload-preconditions.js';
import searchFuzzyTranspositions from './013-search-fuzzy-transpositions.js';
import searchAccessKeys from './014-search-access-keys.js';
import searchPhrases from './015-search-phrases.js';
import accessEpoch from './016-access-epoch.js';
import accessEpochNotify from './017-access-epoch-notify.js';
import dropUploadFileMode from './018-drop-upload-file-mode.js';
import groupMembers from './019-group-members.js';
import credentialFailures from './020-credential-failures.js';
import elementDataLimits from './021-element-data-limits.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: Migration[] = [
  { version: 1, name: 'elements', sql: elements },
  { version: 2, name: 'accounts', sql: accounts },
  { version: 3, name: 'uploads', sql: uploads },
  { version: 4, name: 'access', sql: access },
  { version: 5, name: 'access-index', sql: accessIndex },
  { version: 6, name: 'search-index', sql: searchIndex },
  { version: 7, name: 'search-document', sql: searchDocument },
  { version: 8, name: 'drop-type-index', sql: dropTypeIndex },
  { version: 9, name: 'search-field-backslash', sql: searchFieldBackslash },
  { version: 10, name: 'search-fuzzy-any-field', sql: searchFuzzyAnyField },
  { version: 11, name: 'relation-writes-need-read', sql: relationWritesNeedRead },
  { version: 12, name: 'upload-preconditions', sql: uploadPreconditions },
  { version: 13, name: 'search-fuzzy-transpositions', sql: searchFuzzyTranspositions },
  { version: 14, name: 'search-access-keys', sql: searchAccessKeys },
  { version: 15, name: 'search-phrases', sql: searchPhrases },
  { version: 16, name: 'access-epoch', sql: accessEpoch },
  { version: 17, name: 'access-epoch-notify', sql: accessEpochNotify },
  { version: 18, name: 'drop-upload-file-mode', sql: dropUploadFileMode },
  { version: 19, name: 'group-members', sql: groupMembers },
  { version: 20, name: 'credential-failures', sql: credentialFailures },
  { version: 21, name: 'element-data-limits', sql: elementDataLimits },
];
