/**
 * The harness as the Harness view shows it (`IPrimeHarness`): the entries and broken files, the
 * refinements, the selected entry with its history, and every change a person can make. The
 * view renders what this holds; a change reloads what it touched.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { diffPair, newEntryBody } from './harnessData';
import type {
  IEntryRef,
  IEntryUpdate,
  IHarnessEntry,
  IHarnessListing,
  IHarnessVersion,
  INewEntryDraft,
  IPrimeAPI,
  IPrimeHarness,
  IRefinement,
  IRefineRequest,
  IVersionFiles,
  ReviewAction
} from './tokens';

export class HarnessModel implements IPrimeHarness {
  constructor(readonly api: IPrimeAPI) {}

  /** Entries, broken files, the review policy and the scopes' roots (after the last refresh). */
  get listing(): IHarnessListing | null {
    return this._listing;
  }

  /** Refinements, newest first as the server gives them. */
  get refinements(): readonly IRefinement[] {
    return this._refinements;
  }

  get selected(): IEntryRef | null {
    return this._selected;
  }

  /** The selected entry (with its content and files) and its versions, once loaded. */
  get entry(): IHarnessEntry | null {
    return this._entry;
  }

  get versions(): readonly IHarnessVersion[] {
    return this._versions;
  }

  /** Emitted when the listing, the refinements or the selected entry changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Whether the daemon serves the harness (GET /api/prime/harness answers; asked once). */
  available(): Promise<boolean> {
    if (!this._available) {
      this._available = this.api.harness().then(
        () => true,
        () => false
      );
    }
    return this._available;
  }

  /** Reload entries and refinements, and the selected entry (deselected if it is gone). */
  async refresh(): Promise<void> {
    const [listing, refinements] = await Promise.all([this.api.harness(), this.api.refinements()]);
    this._listing = listing;
    this._refinements = refinements;
    const sel = this._selected;
    if (sel && !listing.entries.some(e => e.kind === sel.kind && e.id === sel.id)) {
      this._selected = null;
      this._entry = null;
      this._versions = [];
    }
    this._changed.emit();
    if (this._selected) {
      await this.select(this._selected.kind, this._selected.id);
    }
  }

  /** Load an entry and its history (throws if it cannot be loaded; the selection stays). */
  async select(kind: string, id: string): Promise<void> {
    this._selected = { kind, id };
    this._changed.emit();
    const [entry, versions] = await Promise.all([this.api.harnessEntry(kind, id), this.api.harnessHistory(kind, id)]);
    if (this._selected?.kind === kind && this._selected.id === id) {
      this._entry = entry;
      this._versions = versions;
      this._changed.emit();
    }
  }

  /** Create an entry from the New entry dialog's draft and select it. */
  async create(draft: INewEntryDraft): Promise<IHarnessEntry> {
    const entry = await this.api.harnessCreate(newEntryBody(draft));
    this._selected = { kind: entry.kind, id: entry.id };
    await this.refresh();
    return entry;
  }

  /** The latest version of an entry (for the editor's reload). */
  latest(kind: string, id: string): Promise<IHarnessEntry> {
    return this.api.harnessEntry(kind, id);
  }

  /** Save an edit (409 if someone changed the entry since `base_version`). */
  async update(kind: string, id: string, body: IEntryUpdate): Promise<IHarnessEntry> {
    const entry = await this.api.harnessUpdate(kind, id, body);
    await this.refresh();
    return entry;
  }

  /** The diff a version's "Diff" shows (against the version before it); null for the first. */
  async diff(version: number): Promise<{ pair: [number, number]; diff: string } | null> {
    const sel = this._selected;
    const pair = diffPair([...this._versions], version);
    if (!sel || !pair) {
      return null;
    }
    return { pair, diff: await this.api.harnessDiff(sel.kind, sel.id, pair[0], pair[1]) };
  }

  async version(version: number): Promise<IVersionFiles | null> {
    const sel = this._selected;
    return sel ? this.api.harnessVersion(sel.kind, sel.id, version) : null;
  }

  async rollback(version: number, reason: string): Promise<IHarnessVersion | null> {
    const sel = this._selected;
    if (!sel) {
      return null;
    }
    const v = await this.api.harnessRollback(sel.kind, sel.id, version, reason);
    await this.refresh();
    return v;
  }

  /** Run a refinement (one model call), optionally from a session's trajectory. */
  async refine(options: IRefineRequest = {}): Promise<IRefinement> {
    const r = await this.api.refine(options);
    await this.refresh();
    return r;
  }

  /** Approve or reject one edit of a refinement (or all pending ones), or roll it back. */
  async review(rid: string, action: ReviewAction, edit?: number): Promise<IRefinement> {
    const r = await this.api.reviewRefinement(rid, action, edit === undefined ? undefined : [edit]);
    await this.refresh();
    return r;
  }

  dispose(): void {
    if (!this._disposed) {
      this._disposed = true;
      Signal.clearData(this);
    }
  }

  private _listing: IHarnessListing | null = null;
  private _refinements: IRefinement[] = [];
  private _selected: IEntryRef | null = null;
  private _entry: IHarnessEntry | null = null;
  private _versions: IHarnessVersion[] = [];
  private _available: Promise<boolean> | null = null;
  private _disposed = false;
  private _changed = new Signal<this, void>(this);
}
