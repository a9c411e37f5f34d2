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
import { ExportOptions, IExportOptionsValue } from './exportDialog';
import { exportBaseName, exportChoices, exportedNotebook, exportPath } from './exportNaming';
import { sessionLabel } from './format';
import type { ExportResult, Session } from './protocol';
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

/** An action on one session, as its command shows and runs it. */
interface ISessionAction {
  label: string;
  caption: string | ((s: Session | undefined) => string);
  icon?: LabIcon;
  enabled: (s: Session) => boolean;
  visible?: () => boolean;
  run: (s: Session) => Promise<void>;
}

/** The actions on one session; returns the ids, in the context menu's order. */
export function addSessionCommands(app: JupyterFrontEnd, options: ISessionCommandsOptions): string[] {
  const actions: [string, ISessionAction][] = [
    [CommandIDs.interrupt, interruptAction(options)],
    [CommandIDs.cancel, cancelAction(options)],
    [CommandIDs.openConsole, consoleAction(app, options)],
    [CommandIDs.exportNotebook, exportAction(app, options)],
    [CommandIDs.refine, refineAction(app, options)],
    [CommandIDs.sendMessage, messageAction(options)]
  ];
  for (const [id, action] of actions) {
    addAction(app, options, id, action);
  }
  // The enabled state follows the sessions (a state change enables or disables most of them).
  options.sessions.changed.connect(() => {
    for (const id of [CommandIDs.interrupt, CommandIDs.cancel, CommandIDs.openConsole, CommandIDs.sendMessage]) {
      app.commands.notifyCommandChanged(id);
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

/** The session a command applies to: args.id, the row under the context menu, or the current view. */
function targetSession(
  app: JupyterFrontEnd,
  { sessions, views }: ISessionCommandsOptions,
  args: ReadonlyPartialJSONObject
): Session | undefined {
  let id = typeof args.id === 'string' ? args.id : undefined;
  if (!id) {
    const row = app.contextMenuHitTest(n => n.matches(ROW_SELECTOR));
    id = row?.dataset.sessionId;
  }
  if (!id) {
    const current = views.tracker.currentWidget;
    if (current && app.shell.currentWidget === current) {
      id = current.content.sessionId;
    }
  }
  return id ? sessions.get(id) : undefined;
}

/** Add `action` as the command `id`; an error it throws is shown in a dialog. */
function addAction(app: JupyterFrontEnd, options: ISessionCommandsOptions, id: string, action: ISessionAction): void {
  const target = (args: ReadonlyPartialJSONObject) => targetSession(app, options, args);
  app.commands.addCommand(id, {
    label: action.label,
    caption: args => (typeof action.caption === 'string' ? action.caption : action.caption(target(args))),
    icon: args => (args.isPalette ? undefined : action.icon),
    isEnabled: args => {
      const s = target(args);
      return !!s && action.enabled(s);
    },
    isVisible: action.visible,
    execute: async args => {
      const s = target(args);
      if (!s) {
        return;
      }
      try {
        await action.run(s);
      } catch (err) {
        await showErrorMessage(action.label, (err as Error).message || String(err));
      }
    }
  });
}

function interruptAction({ api, sessions, trans }: ISessionCommandsOptions): ISessionAction {
  return {
    label: trans.__('Interrupt Agent'),
    caption: trans.__('Interrupt the running turn of this agent'),
    icon: stopIcon,
    enabled: s => s.state === 'RUNNING',
    run: async s => {
      await api.interrupt(s.id);
      void sessions.requestUpdate();
    }
  };
}

function cancelAction(options: ISessionCommandsOptions): ISessionAction {
  const { api, sessions, settings, trans } = options;
  return {
    label: trans.__('Cancel Agent'),
    caption: trans.__('Cancel this agent and its sub-agents'),
    icon: closeIcon,
    enabled: s => !isTerminal(s.state),
    run: async s => {
      if (settings.confirmBeforeCancel && !(await confirmCancel(options, s))) {
        return;
      }
      await api.cancelSession(s.id);
      await sessions.requestUpdate();
    }
  };
}

/** Whether the person confirms cancelling `s` (and its running sub-agents). */
async function confirmCancel({ sessions, trans }: ISessionCommandsOptions, s: Session): Promise<boolean> {
  const running = sessions.children(s.id).some(c => !isTerminal(c.state));
  const result = await showDialog({
    title: trans.__('Cancel agent?'),
    body: running
      ? trans.__('Cancel “%1” and its sub-agents? This cannot be undone.', sessionLabel(s))
      : trans.__('Cancel “%1”? This cannot be undone.', sessionLabel(s)),
    buttons: [Dialog.cancelButton({ label: trans.__('Keep running') }), Dialog.warnButton({ label: trans.__('Cancel agent') })]
  });
  return result.button.accept;
}

function consoleAction(app: JupyterFrontEnd, options: ISessionCommandsOptions): ISessionAction {
  const { trans } = options;
  return {
    label: trans.__('Open Agent Console'),
    caption: s => {
      const reason = s ? consoleUnavailable(s) : null;
      return reason ? noConsole(reason, trans) : trans.__("Attach a console to this agent's kernel (co-work in its namespace)");
    },
    icon: consoleIcon,
    // An ended root keeps its kernel a while for co-working (KernelCustody.keep_root_kernel);
    // the session's `kernel_alive` says whether it still runs.
    enabled: s => consoleUnavailable(s) === null,
    run: s => openConsole(app, options, s)
  };
}

/** A console on the session's kernel, below its view when that is open. */
async function openConsole(app: JupyterFrontEnd, { sessions, views, trans }: ISessionCommandsOptions, s: Session): Promise<void> {
  // No event says a kept kernel was released: the record is read again before attaching.
  const fresh = await sessions.fetch(s.id);
  const reason = consoleUnavailable(fresh);
  if (reason) {
    await showErrorMessage(trans.__('No kernel'), trans.__('Cannot open a console: %1.', noConsole(reason, trans)));
    return;
  }
  const view = views.tracker.find(w => w.content.sessionId === s.id);
  await app.commands.execute('console:create', {
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

function exportAction(app: JupyterFrontEnd, options: ISessionCommandsOptions): ISessionAction {
  const { trans } = options;
  return {
    label: trans.__('Export Agent as Notebook…'),
    caption: trans.__('Export the trajectory as a notebook, at a path you choose'),
    icon: downloadIcon,
    enabled: () => true,
    run: async s => {
      const choice = await askExport(app, options, s);
      if (!choice) {
        return;
      }
      const result = await writeExport(options, s, choice);
      if (result) {
        await showExported(app, trans, result, exportedNotebook(result, s.id), choice.open);
      }
    }
  };
}

/** Where and how to export `s`, from the dialog (prefilled with a free path); null if cancelled. */
async function askExport(
  app: JupyterFrontEnd,
  { sessions, trans }: ISessionCommandsOptions,
  s: Session
): Promise<IExportOptionsValue | null> {
  const base = exportBaseName(s);
  // The first of <name>.ipynb, <name>-1.ipynb, ... (or folders) not taken yet, prefilled.
  const free = { notebook: await firstFreePath(app, base, false), folder: await firstFreePath(app, base, true) };
  const choice = await showDialog({
    title: trans.__('Export as notebook'),
    body: new ExportOptions(exportChoices(s, sessions.sessions), subtree => (subtree ? free.folder : free.notebook), trans),
    buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.okButton({ label: trans.__('Export') })]
  });
  return choice.button.accept && choice.value && choice.value.path ? choice.value : null;
}

/** The first export path for `base` that names nothing yet (a probe of the contents API). */
async function firstFreePath(app: JupyterFrontEnd, base: string, subtree: boolean): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const path = exportPath(base, subtree, attempt);
    try {
      await app.serviceManager.contents.get(path, { content: false });
    } catch {
      return path;
    }
  }
  return exportPath(base, subtree, 50);
}

/**
 * Export `s` as chosen. A path taken meanwhile, or typed over an earlier export, is replaced
 * only if the person says so; null when they do not.
 */
async function writeExport(
  { api, trans }: ISessionCommandsOptions,
  s: Session,
  { path, subtree, with_context }: IExportOptionsValue
): Promise<ExportResult | null> {
  let force = false;
  for (;;) {
    try {
      return await api.exportNotebook(s.id, { path, subtree, force, with_context });
    } catch (err) {
      if (force || !(err instanceof PrimeAPIError && err.status === 409 && err.data?.exists)) {
        throw err;
      }
      const replace = await showDialog({
        title: trans.__('Replace %1?', path),
        body: trans.__('%1 already exists.', path),
        buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.warnButton({ label: trans.__('Replace') })]
      });
      if (!replace.button.accept) {
        return null;
      }
      force = true;
    }
  }
}

/** Open the exported notebook, or say where it is (with an Open button). */
async function showExported(
  app: JupyterFrontEnd,
  trans: TranslationBundle,
  result: ExportResult,
  notebook: string,
  open: boolean
): Promise<void> {
  const openIt = () => app.commands.execute('docmanager:open', { path: notebook });
  if (open) {
    await openIt();
  } else {
    Notification.success(trans.__('Exported to %1', result.path), {
      autoClose: 8000,
      actions: [{ label: trans.__('Open'), callback: () => void openIt() }]
    });
  }
}

function refineAction(app: JupyterFrontEnd, { harness, trans }: ISessionCommandsOptions): ISessionAction {
  return {
    label: trans.__('Refine Harness from Agent'),
    caption: trans.__("Turn this agent's trajectory into harness edits"),
    icon: buildIcon,
    enabled: () => harness(),
    visible: () => harness(),
    run: async s => {
      await app.commands.execute(CommandIDs.openHarness, { refineFrom: s.id });
    }
  };
}

function messageAction({ api, trans }: ISessionCommandsOptions): ISessionAction {
  return {
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
  };
}
