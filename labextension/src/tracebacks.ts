/**
 * A session view folds a traceback it has shown already: an agent that fails the same way
 * cell after cell would otherwise fill its view with the same frames. The first time an error
 * (its name and message) is shown it is whole; later, its last line with a note. Pure (unit
 * tested in node: labextension/test/tracebacks.spec.ts).
 */

/** What of an nbformat output this needs. */
export interface IOutputLike {
  output_type: string;
  ename?: unknown;
  evalue?: unknown;
  traceback?: unknown;
  [key: string]: unknown;
}

export class TracebackFolder {
  /** `outputs` with each error already shown once (in this view) reduced to its last line. */
  fold<T extends IOutputLike>(outputs: T[], note: string): T[] {
    return outputs.map(o => {
      if (o.output_type !== 'error') {
        return o;
      }
      const key = `${String(o.ename)}: ${String(o.evalue)}`;
      if (!this._seen.has(key)) {
        this._seen.add(key);
        return o;
      }
      return { ...o, traceback: [`\u001b[0;31m${String(o.ename)}\u001b[0m: ${String(o.evalue)}`, note] };
    });
  }

  private _seen = new Set<string>();
}
