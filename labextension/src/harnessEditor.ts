/**
 * Dialogs that write the harness through the REST API: a new entry (note, memory, skill or
 * sub-agent), and an edit of an entry the JupyterLab editor cannot open (hidden `.prime/` folders the
 * contents API refuses, global entries outside the server root). Saves send the loaded version
 * as `base_version`, so a concurrent change is a 409 Conflict that keeps the person's edits and
 * offers to reload. Pure logic: harnessData.ts.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { PrimeAPIError } from './api';
import { h } from './dom';
import {
  conflictMessage,
  entryDraft,
  entryUpdate,
  IEntryDraft,
  KINDS
} from './harnessData';
import { HarnessModel } from './harnessModel';
import { HARNESS_KINDS, HarnessKind } from './protocol';
import type { IHarnessEntry, INewEntryDraft } from './tokens';

interface IEditorState {
  entry: IHarnessEntry;
  draft: IEntryDraft;
  note: string;
  error: string;
  /** The person's edits from before a reload, shown to copy from. */
  previous: IEntryDraft | null;
}

const field = (label: string, control: HTMLElement) =>
  h('label', { className: 'jp-PrimeHarness-field' }, h('span', {}, label), control);

function textarea(label: string, rows: number, value: string, className = ''): HTMLTextAreaElement {
  const el = h('textarea', { className: `jp-mod-styled ${className}`.trim(), rows, 'aria-label': label });
  el.value = value;
  return el;
}

/** The dialog body: title, content and metadata (JSON) of one entry. */
class EntryEditorBody extends Widget implements Dialog.IBodyWidget<IEntryDraft> {
  constructor(state: IEditorState, trans: TranslationBundle) {
    super();
    this.addClass('jp-PrimeHarness-editor');
    const { entry, draft } = state;
    this._title = h('input', { className: 'jp-mod-styled', type: 'text', 'aria-label': trans.__('Title') });
    this._title.value = draft.title;
    this._content = textarea(trans.__('Content'), 14, draft.content, 'jp-PrimeHarness-editorContent');
    this._metadata = textarea(trans.__('Metadata (JSON)'), 5, draft.metadata, 'jp-PrimeHarness-editorMetadata');
    const files = Object.keys(entry.files || {});
    const previous = state.previous;
    this.node.append(
      ...[
        state.note ? h('div', { className: 'jp-PrimeHarness-hint' }, state.note) : null,
        state.error ? h('div', { className: 'jp-PrimeHarness-error', role: 'alert' }, state.error) : null,
        h('div', { className: 'jp-PrimeHarness-entryMeta' }, entry.file || entry.path),
        field(trans.__('Title'), this._title),
        field(trans.__('Content'), this._content),
        field(trans.__('Metadata (JSON)'), this._metadata),
        files.length
          ? h('div', { className: 'jp-PrimeHarness-files' }, trans.__('Other files (unchanged): %1', files.join(', ')))
          : null,
        previous
          ? h(
              'details',
              { className: 'jp-PrimeHarness-previousDraft', open: true },
              h('summary', {}, trans.__('Your edits from before the reload')),
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
  model: HarnessModel,
  entry: IHarnessEntry,
  note: string,
  trans: TranslationBundle
): Promise<IHarnessEntry | null> {
  const state: IEditorState = { entry, draft: entryDraft(entry), note, error: '', previous: null };
  let conflict = false;
  for (;;) {
    const e = state.entry;
    const result = await showDialog<IEntryDraft>({
      title: trans.__('Edit %1 %2 (%3, v%4)', e.kind, e.id, e.scope, e.version ?? '?'),
      body: new EntryEditorBody(state, trans),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        conflict
          ? Dialog.warnButton({ label: trans.__('Reload latest'), actions: ['reload'] })
          : Dialog.okButton({ label: trans.__('Save') })
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
      state.entry = await model.latest(e.kind, e.id);
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
      return await model.update(e.kind, e.id, body);
    } catch (err) {
      const message = (err as Error).message || String(err);
      conflict = err instanceof PrimeAPIError && err.status === 409;
      state.error = conflict ? conflictMessage(e, message) : trans.__('Could not save: %1', message);
    }
  }
}

/** The New entry dialog's body: kind, scope, title, id, content, metadata. */
class NewEntryBody extends Widget implements Dialog.IBodyWidget<INewEntryDraft> {
  constructor(draft: INewEntryDraft, error: string, trans: TranslationBundle) {
    super();
    this.addClass('jp-PrimeHarness-editor');
    this._kind = h('select', { className: 'jp-mod-styled', 'aria-label': trans.__('Kind') });
    for (const kind of KINDS) {
      this._kind.append(h('option', { value: kind }, HARNESS_KINDS[kind].title));
    }
    this._kind.value = draft.kind;
    this._scope = h('select', { className: 'jp-mod-styled', 'aria-label': trans.__('Scope') });
    this._scope.append(
      h('option', { value: 'project' }, trans.__('project (this server root)')),
      h('option', { value: 'global' }, trans.__('global (every project)'))
    );
    this._scope.value = draft.scope;
    this._title = h('input', { className: 'jp-mod-styled', type: 'text', 'aria-label': trans.__('Title') });
    this._title.value = draft.title;
    this._id = h('input', {
      className: 'jp-mod-styled',
      type: 'text',
      'aria-label': trans.__('Id'),
      placeholder: trans.__('from the title'),
      spellcheck: 'false'
    });
    this._id.value = draft.id;
    this._content = textarea(trans.__('Content'), 10, draft.content, 'jp-PrimeHarness-editorContent');
    this._metadata = textarea(trans.__('Metadata (JSON)'), 3, draft.metadata, 'jp-PrimeHarness-editorMetadata');
    this.node.append(
      ...[
        error ? h('div', { className: 'jp-PrimeHarness-error', role: 'alert' }, error) : null,
        field(trans.__('Kind'), this._kind),
        field(trans.__('Scope'), this._scope),
        field(trans.__('Title'), this._title),
        field(trans.__('Id'), this._id),
        field(trans.__('Content'), this._content),
        field(trans.__('Metadata (JSON)'), this._metadata)
      ].filter((n): n is NonNullable<typeof n> => n !== null)
    );
  }

  getValue(): INewEntryDraft {
    return {
      kind: this._kind.value as HarnessKind,
      scope: this._scope.value as INewEntryDraft['scope'],
      title: this._title.value,
      id: this._id.value,
      content: this._content.value,
      metadata: this._metadata.value
    };
  }

  private _kind: HTMLSelectElement;
  private _scope: HTMLSelectElement;
  private _title: HTMLInputElement;
  private _id: HTMLInputElement;
  private _content: HTMLTextAreaElement;
  private _metadata: HTMLTextAreaElement;
}

/**
 * Ask for a new entry until it is created (the entry, selected in the model) or the person
 * cancels (null); a refusal (a bad id, an existing entry) re-opens it with the reason.
 */
export async function createHarnessEntry(
  model: HarnessModel,
  kind: HarnessKind,
  trans: TranslationBundle
): Promise<IHarnessEntry | null> {
  let draft: INewEntryDraft = { kind, scope: 'project', title: '', id: '', content: '', metadata: '' };
  let error = '';
  for (;;) {
    const result = await showDialog<INewEntryDraft>({
      title: trans.__('New harness entry'),
      body: new NewEntryBody(draft, error, trans),
      buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.okButton({ label: trans.__('Create') })],
      focusNodeSelector: 'input'
    });
    if (!result.button.accept) {
      return null;
    }
    if (result.value) {
      draft = result.value;
    }
    try {
      return await model.create(draft);
    } catch (err) {
      error = trans.__('Could not create it: %1', (err as Error).message || String(err));
    }
  }
}
