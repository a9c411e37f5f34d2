/**
 * Edit a harness entry through the REST API: for entries the JupyterLab editor cannot open
 * (hidden `.prime/` folders the contents API refuses, global entries outside the server root).
 * Saves send the loaded version as `base_version`, so a concurrent change is a 409 Conflict
 * that keeps the person's edits and offers to reload. Pure logic: harnessModel.ts.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { PrimeAPI, PrimeAPIError } from './api';
import { h } from './dom';
import { conflictMessage, entryDraft, entryUpdate, IEntryDraft, IHarnessEntry } from './harnessModel';

interface IEditorState {
  entry: IHarnessEntry;
  draft: IEntryDraft;
  note: string;
  error: string;
  /** The person's edits from before a reload, shown to copy from. */
  previous: IEntryDraft | null;
}

/** The dialog body: title, content and metadata (JSON) of one entry. */
class EntryEditorBody extends Widget implements Dialog.IBodyWidget<IEntryDraft> {
  constructor(state: IEditorState) {
    super();
    this.addClass('jp-PrimeHarness-editor');
    const { entry, draft } = state;
    this._title = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      'aria-label': 'Title'
    });
    this._title.value = draft.title;
    this._content = h('textarea', {
      className: 'jp-mod-styled jp-PrimeHarness-editorContent',
      rows: 14,
      'aria-label': 'Content'
    });
    this._content.value = draft.content;
    this._metadata = h('textarea', {
      className: 'jp-mod-styled jp-PrimeHarness-editorMetadata',
      rows: 5,
      'aria-label': 'Metadata (JSON)'
    });
    this._metadata.value = draft.metadata;
    const files = Object.keys(entry.files || {});
    const previous = state.previous;
    this.node.append(
      ...[
        state.note ? h('div', { className: 'jp-PrimeHarness-hint' }, state.note) : null,
        state.error ? h('div', { className: 'jp-PrimeHarness-error', role: 'alert' }, state.error) : null,
        h('div', { className: 'jp-PrimeHarness-entryMeta' }, entry.file || entry.path),
        h('label', { className: 'jp-PrimeHarness-field' }, h('span', {}, 'Title'), this._title),
        h('label', { className: 'jp-PrimeHarness-field' }, h('span', {}, 'Content'), this._content),
        h('label', { className: 'jp-PrimeHarness-field' }, h('span', {}, 'Metadata (JSON)'), this._metadata),
        files.length ? h('div', { className: 'jp-PrimeHarness-files' }, `Other files (unchanged): ${files.join(', ')}`) : null,
        previous
          ? h(
              'details',
              { className: 'jp-PrimeHarness-previousDraft', open: true },
              h('summary', {}, 'Your edits from before the reload'),
              h('pre', { className: 'jp-PrimeHarness-content' }, `${previous.title}\n\n${previous.content}\n\n${previous.metadata}`)
            )
          : null
      ].filter((n): n is NonNullable<typeof n> => n !== null)
    );
  }

  getValue(): IEntryDraft {
    return { title: this._title.value, content: this._content.value, metadata: this._metadata.value };
  }

  private _title: HTMLInputElement;
  private _content: HTMLTextAreaElement;
  private _metadata: HTMLTextAreaElement;
}

/**
 * Show the editor until the person saves (the saved entry, a new version by "user") or
 * cancels (null). A refused save re-opens it with the edits and the server's reason.
 */
export async function editHarnessEntry(
  api: PrimeAPI,
  entry: IHarnessEntry,
  note: string
): Promise<IHarnessEntry | null> {
  const state: IEditorState = { entry, draft: entryDraft(entry), note, error: '', previous: null };
  let conflict = false;
  for (;;) {
    const e = state.entry;
    const result = await showDialog<IEntryDraft>({
      title: `Edit ${e.kind} ${e.id} (${e.scope}, v${e.version ?? '?'})`,
      body: new EntryEditorBody(state),
      buttons: [
        Dialog.cancelButton(),
        conflict
          ? Dialog.warnButton({ label: 'Reload latest', actions: ['reload'] })
          : Dialog.okButton({ label: 'Save' })
      ],
      focusNodeSelector: 'textarea'
    });
    if (!result.button.accept) {
      return null;
    }
    if (result.value) {
      state.draft = result.value;
    }
    if (result.button.actions.includes('reload')) {
      state.previous = state.draft;
      state.entry = await api.harnessEntry(e.kind, e.id);
      state.draft = entryDraft(state.entry);
      state.error = '';
      conflict = false;
      continue;
    }
    let body;
    try {
      body = entryUpdate(e, state.draft);
    } catch (err) {
      state.error = (err as Error).message;
      continue;
    }
    if (!body) {
      return null; // nothing changed: no new version
    }
    try {
      return await api.harnessUpdate(e.kind, e.id, body);
    } catch (err) {
      const message = (err as Error).message || String(err);
      conflict = err instanceof PrimeAPIError && err.status === 409;
      state.error = conflict ? conflictMessage(e, message) : `Could not save: ${message}`;
    }
  }
}
