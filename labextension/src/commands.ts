/**
 * The extension's commands. Each plugin adds those of its own part: the panel's (open it, New
 * agent, refresh), the session views' (open one), the harness's (open it), and the actions on
 * a session (interrupt, cancel, console, export, message, refine) that apply to `args.id`, the
 * row under the context menu, or the session view in front.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, ICommandPalette, InputDialog, Notification, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { closeIcon, consoleIcon, downloadIcon, buildIcon, LabIcon, stopIcon } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { PrimeAPIError } from './api';
import { ExportOptions } from './exportDialog';
import { exportBaseName, exportChoices, exportedNotebook, exportPath } from './exportNaming';
import { sessionLabel } from './format';
import type { Session } from './protocol';
import { consoleUnavailable, NoConsole } from './sessionIndex';
import { isTerminal } from './states';
import type { IPrimeAPI, IPrimeSessions, IPrimeSessionViews, IPrimeSettings } from './tokens';

export namespace CommandIDs {
  export const openAgents = 'prime-kernel:open-agents';
  export const newAgent = 'prime-kernel:new-agent';
  export const refresh = 'prime-kernel:refresh';
  export const openSession = 'prime-kernel:open-session';
  export const interrupt = 'prime-kernel:interrupt';
  export const cancel = 'prime-kernel:cancel';
  export const openConsole = 'prime-kernel:open-console';
  export const exportNotebook = 'prime-kernel:export-notebook';
  export const refine = 'prime-kernel:refine';
  export const sendMessage = 'prime-kernel:send-message';
  export const openHarness = 'prime-kernel:open-harness';
}

/** The rows of the Agents panel: the context menu's selector. */
export const ROW_SELECTOR = '.jp-PrimeAgents-row';

/** Add commands to the palette, under the extension's category. */
export function addToPalette(palette: ICommandPalette | null, trans: TranslationBundle, ids: string[]): void {
  for (const command of ids) {
    palette?.addItem({ command, category: trans.__('Prime Agents'), args: { isPalette: true } });
  }
}

export interface ISessionCommandsOptions {
  sessions: IPrimeSessions;
  api: IPrimeAPI;
  views: IPrimeSessionViews;
  settings: IPrimeSettings;
  trans: TranslationBundle;
  /** Whether the harness is served (refining needs it). */
  harness: () => boolean;
}

/** What "Open console" says when it cannot attach. */
function noConsole(reason: NoConsole, trans: TranslationBundle): string {
  return reason === 'no-kernel' ? trans.__('the session has no kernel') : trans.__("the session's kernel has been shut down");
}

/** The actions on one session; returns the ids, in the context menu's order. */
export function addSessionCommands(app: JupyterFrontEnd, options: ISessionCommandsOptions): string[] {
  const { commands, shell } = app;
  const { sessions, api, views, settings, trans } = options;

  /** The session a command applies to: args.id, the row under the context menu, or the current view. */
  const resolve = (args: ReadonlyPartialJSONObject): Session | undefined => {
    let id = typeof args.id === 'string' ? args.id : undefined;
    if (!id) {
      const row = app.contextMenuHitTest(n => n.matches(ROW_SELECTOR));
      id = row?.dataset.sessionId;
    }
    if (!id) {
      const current = views.tracker.currentWidget;
      if (current && shell.currentWidget === current) {
        id = current.content.sessionId;
      }
    }
    return id ? sessions.get(id) : undefined;
  };

  const add = (
    id: string,
    opts: {
      label: string;
      caption: string | ((s: Session | undefined) => string);
      icon?: LabIcon;
      enabled: (s: Session) => boolean;
      visible?: () => boolean;
      run: (s: Session) => Promise<void>;
    }
  ) =>
    commands.addCommand(id, {
      label: opts.label,
      caption: args => (typeof opts.caption === 'string' ? opts.caption : opts.caption(resolve(args))),
      icon: args => (args.isPalette ? undefined : opts.icon),
      isEnabled: args => {
        const s = resolve(args);
        return !!s && opts.enabled(s);
      },
      isVisible: opts.visible,
      execute: async args => {
        const s = resolve(args);
        if (!s) {
          return;
        }
        try {
          await opts.run(s);
        } catch (err) {
          await showErrorMessage(opts.label, (err as Error).message || String(err));
        }
      }
    });

  add(CommandIDs.interrupt, {
    label: trans.__('Interrupt Agent'),
    caption: trans.__('Interrupt the running turn of this agent'),
    icon: stopIcon,
    enabled: s => s.state === 'RUNNING',
    run: async s => {
      await api.interrupt(s.id);
      void sessions.requestUpdate();
    }
  });

  add(CommandIDs.cancel, {
    label: trans.__('Cancel Agent'),
    caption: trans.__('Cancel this agent and its sub-agents'),
    icon: closeIcon,
    enabled: s => !isTerminal(s.state),
    run: async s => {
      if (settings.confirmBeforeCancel) {
        const running = sessions.children(s.id).some(c => !isTerminal(c.state));
        const result = await showDialog({
          title: trans.__('Cancel agent?'),
          body: running
            ? trans.__('Cancel “%1” and its sub-agents? This cannot be undone.', sessionLabel(s))
            : trans.__('Cancel “%1”? This cannot be undone.', sessionLabel(s)),
          buttons: [
            Dialog.cancelButton({ label: trans.__('Keep running') }),
            Dialog.warnButton({ label: trans.__('Cancel agent') })
          ]
        });
        if (!result.button.accept) {
          return;
        }
      }
      await api.cancelSession(s.id);
      await sessions.requestUpdate();
    }
  });

  add(CommandIDs.openConsole, {
    label: trans.__('Open Agent Console'),
    caption: s => {
      const reason = s ? consoleUnavailable(s) : null;
      return reason ? noConsole(reason, trans) : trans.__("Attach a console to this agent's kernel (co-work in its namespace)");
    },
    icon: consoleIcon,
    // An ended root keeps its kernel a while for co-working (Daemon.keep_root_kernel);
    // the session's `kernel_alive` says whether it still runs.
    enabled: s => consoleUnavailable(s) === null,
    run: async s => {
      // No event says a kept kernel was released: the record is read again before attaching.
      const fresh = await sessions.fetch(s.id);
      const reason = consoleUnavailable(fresh);
      if (reason) {
        await showErrorMessage(trans.__('No kernel'), trans.__('Cannot open a console: %1.', noConsole(reason, trans)));
        return;
      }
      const view = views.tracker.find(w => w.content.sessionId === s.id);
      await commands.execute('console:create', {
        name: trans.__('Agent: %1', sessionLabel(s, 5)),
        ...(view && view.isAttached ? { ref: view.id, insertMode: 'split-bottom' } : {}),
        kernelPreference: {
          id: fresh.kernel_id,
          shouldStart: true,
          canStart: true,
          autoStartDefault: false,
          shutdownOnDispose: false
        },
        activate: true
      });
    }
  });

  add(CommandIDs.exportNotebook, {
    label: trans.__('Export Agent as Notebook…'),
    caption: trans.__('Export the trajectory as a notebook, at a path you choose'),
    icon: downloadIcon,
    enabled: () => true,
    run: async s => {
      const base = exportBaseName(s);
      // The first of <name>.ipynb, <name>-1.ipynb, ... (or folders) not taken yet, prefilled.
      const free = { notebook: await firstFree(base, false), folder: await firstFree(base, true) };
      const choice = await showDialog({
        title: trans.__('Export as notebook'),
        body: new ExportOptions(exportChoices(s, sessions.sessions), subtree => (subtree ? free.folder : free.notebook), trans),
        buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.okButton({ label: trans.__('Export') })]
      });
      if (!choice.button.accept || !choice.value || !choice.value.path) {
        return;
      }
      const { path, subtree, with_context, open } = choice.value;
      let force = false;
      for (;;) {
        try {
          const result = await api.exportNotebook(s.id, { path, subtree, force, with_context });
          const notebook = exportedNotebook(result, s.id);
          if (open) {
            await commands.execute('docmanager:open', { path: notebook });
          } else {
            Notification.success(trans.__('Exported to %1', result.path), {
              autoClose: 8000,
              actions: [{ label: trans.__('Open'), callback: () => void commands.execute('docmanager:open', { path: notebook }) }]
            });
          }
          return;
        } catch (err) {
          // Taken meanwhile, or a path typed over an earlier export: replace it only if asked.
          if (force || !(err instanceof PrimeAPIError && err.status === 409 && err.data?.exists)) {
            throw err;
          }
          const replace = await showDialog({
            title: trans.__('Replace %1?', path),
            body: trans.__('%1 already exists.', path),
            buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.warnButton({ label: trans.__('Replace') })]
          });
          if (!replace.button.accept) {
            return;
          }
          force = true;
        }
      }
    }
  });

  /** The first export path for `base` that names nothing yet (a probe of the contents API). */
  const firstFree = async (base: string, subtree: boolean): Promise<string> => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const path = exportPath(base, subtree, attempt);
      try {
        await app.serviceManager.contents.get(path, { content: false });
      } catch {
        return path;
      }
    }
    return exportPath(base, subtree, 50);
  };

  add(CommandIDs.refine, {
    label: trans.__('Refine Harness from Agent'),
    caption: trans.__("Turn this agent's trajectory into harness edits"),
    icon: buildIcon,
    enabled: () => options.harness(),
    visible: () => options.harness(),
    run: async s => {
      await commands.execute(CommandIDs.openHarness, { refineFrom: s.id });
    }
  });

  add(CommandIDs.sendMessage, {
    label: trans.__('Message Agent…'),
    caption: trans.__('Send a message to this agent'),
    enabled: s => !isTerminal(s.state),
    run: async s => {
      const result = await InputDialog.getText({
        title: trans.__('Message “%1”', sessionLabel(s, 5)),
        placeholder: trans.__('Your message')
      });
      if (result.button.accept && result.value && result.value.trim()) {
        await api.sendMessage(s.id, result.value.trim());
      }
    }
  });

  // The enabled state follows the sessions (a state change enables or disables most of them).
  sessions.changed.connect(() => {
    for (const id of [CommandIDs.interrupt, CommandIDs.cancel, CommandIDs.openConsole, CommandIDs.sendMessage]) {
      commands.notifyCommandChanged(id);
    }
  });
  return [
    CommandIDs.sendMessage,
    CommandIDs.interrupt,
    CommandIDs.cancel,
    CommandIDs.openConsole,
    CommandIDs.exportNotebook,
    CommandIDs.refine
  ];
}
