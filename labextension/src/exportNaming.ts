/**
 * Where "Export as notebook" writes and what it opens. Pure (labextension/test/export.spec.ts).
 */
import type { ExportResult, Session } from './protocol';

/** A file-name-safe slug: "Fix the CSV loader!" -> "fix-the-csv-loader". */
export function slug(text: string, max = 40): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/, '');
}

/** The base name of an export: the session's name as a slug, else its id. */
export function exportBaseName(s: Pick<Session, 'id' | 'name'>): string {
  return (s.name && slug(s.name)) || s.id;
}

/** The export dialog's options a session offers: its sub-agents, its context input. */
export interface IExportChoices {
  subtree: boolean;
  withContext: boolean;
}

export function exportChoices(
  s: Pick<Session, 'id' | 'context_type'>,
  sessions: Iterable<Pick<Session, 'parent_id'>>
): IExportChoices {
  let subtree = false;
  for (const c of sessions) {
    if (c.parent_id === s.id) {
      subtree = true;
      break;
    }
  }
  return { subtree, withContext: !!s.context_type };
}

/**
 * The n-th path to try for an export at the server root (0: `<base>.ipynb`,
 * then `<base>-1.ipynb`, ...). A subtree export is a folder (`<base>`, `<base>-1`, ...).
 */
export function exportPath(base: string, subtree: boolean, attempt: number): string {
  const name = attempt ? `${base}-${attempt}` : base;
  return subtree ? name : `${name}.ipynb`;
}

/** The notebook to open after an export: the session's own one (a subtree folder holds several). */
export function exportedNotebook(result: ExportResult, sessionId: string): string {
  const own = result.files.find(
    f => f === `${sessionId}.ipynb` || f.endsWith(`/${sessionId}.ipynb`)
  );
  return own || result.path;
}
