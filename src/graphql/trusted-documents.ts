// The trusted documents manifest (GRAPHQL_TRUSTED_DOCUMENTS), as GraphQL Code Generator's client
// preset writes it with `persistedDocuments`: a JSON object of `"sha256:<hex>": "<document>"`. Read and
// checked once at start-up, so a wrong file stops the start instead of refusing every request.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'graphql';
import { StartupError } from '../startup-error.js';

export interface TrustedDocumentsConfig {
  /** Document text by its sha256 (lowercase hex, no prefix); null: no manifest. */
  manifest: ReadonlyMap<string, string> | null;
  /** Callers other than administrators may run manifest documents only (GRAPHQL_TRUSTED_ONLY). */
  only: boolean;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The hex digest a document id names: `sha256:<hex>` (the GraphQL over HTTP persisted documents
 * appendix, which the client preset follows) or the bare hex of Apollo's `persistedQuery.sha256Hash`.
 */
export function sha256OfId(id: string): string | null {
  const hex = id.startsWith('sha256:') ? id.slice('sha256:'.length) : id;
  return SHA256_HEX.test(hex) ? hex : null;
}

function readManifestFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new StartupError(`GRAPHQL_TRUSTED_DOCUMENTS: ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StartupError(`GRAPHQL_TRUSTED_DOCUMENTS: ${path} is not JSON (${(error as Error).message})`);
  }
}

function checkedEntry(path: string, id: string, document: unknown): [string, string] {
  const problem = (what: string) =>
    new StartupError(`GRAPHQL_TRUSTED_DOCUMENTS: ${path}: the entry ${JSON.stringify(id.slice(0, 80))} ${what}`);
  const hash = sha256OfId(id);
  if (!hash) throw problem('is not named "sha256:<64 hex digits>"');
  if (typeof document !== 'string') throw problem('is not a document string');
  if (sha256Hex(document) !== hash) throw problem('is not the sha256 of its document');
  try {
    parse(document);
  } catch (error) {
    throw problem(`is not a GraphQL document (${(error as Error).message})`);
  }
  return [hash, document];
}

export function loadTrustedManifest(path: string): ReadonlyMap<string, string> {
  const json = readManifestFile(path);
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new StartupError(
      `GRAPHQL_TRUSTED_DOCUMENTS: ${path} must hold a JSON object of "sha256:<hex>": "<document>" entries (npm run codegen writes one)`,
    );
  }
  return new Map(Object.entries(json).map(([id, document]) => checkedEntry(path, id, document)));
}

function booleanSetting(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '' || /^(false|0|no)$/i.test(value)) return false;
  if (/^(true|1|yes)$/i.test(value)) return true;
  throw new StartupError(`${name} must be true or false, got ${JSON.stringify(value)}`);
}

/** GRAPHQL_TRUSTED_DOCUMENTS=<manifest path> and GRAPHQL_TRUSTED_ONLY=true|false. */
export function readTrustedDocuments(env: NodeJS.ProcessEnv): TrustedDocumentsConfig {
  const only = booleanSetting('GRAPHQL_TRUSTED_ONLY', env.GRAPHQL_TRUSTED_ONLY);
  const path = env.GRAPHQL_TRUSTED_DOCUMENTS || undefined;
  if (only && !path) {
    throw new StartupError(
      'GRAPHQL_TRUSTED_ONLY=true needs the manifest of trusted documents: set GRAPHQL_TRUSTED_DOCUMENTS=<path to persisted-documents.json>',
    );
  }
  return { manifest: path ? loadTrustedManifest(path) : null, only };
}
