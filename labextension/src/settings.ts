/**
 * The extension's settings (`IPrimeSettings`), read from JupyterLab's settings registry
 * (schema: labextension/schema/settings.json), with the schema's defaults when there is none.
 */
import type { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ISignal, Signal } from '@lumino/signaling';

import type { IBudgetInput, IPrimeSettings } from './tokens';

export const SETTINGS_ID = 'prime-kernel:settings';

export class PrimeSettings implements IPrimeSettings {
  refreshInterval = 10;
  defaultModel = '';
  defaultBudget: IBudgetInput = {};
  confirmBeforeCancel = true;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Follow the registry's values from now on. */
  connect(settings: ISettingRegistry.ISettings): void {
    const read = () => {
      const c = settings.composite;
      this.refreshInterval = Number(c.refreshInterval ?? 10);
      this.defaultModel = String(c.defaultModel ?? '');
      const budget = (c.defaultBudget ?? {}) as Record<string, unknown>;
      this.defaultBudget = Object.fromEntries(
        Object.entries(budget)
          .filter(([k, v]) => ['tokens', 'dollars', 'seconds', 'turns'].includes(k) && v !== null && v !== '')
          .map(([k, v]) => [k, String(v)])
      );
      this.confirmBeforeCancel = c.confirmBeforeCancel !== false;
      this._changed.emit();
    };
    settings.changed.connect(read);
    read();
  }

  private _changed = new Signal<this, void>(this);
}
