import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  CommandToolbarButton,
  Dialog,
  ICommandPalette,
  InputDialog,
  MainAreaWidget,
  showDialog,
  showErrorMessage,
  WidgetTracker
} from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import {
  addIcon,
  buildIcon,
  closeIcon,
  consoleIcon,
  downloadIcon,
  refreshIcon,
  stopIcon
} from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { IAgentActions } from './actions';
import { PrimeAPI, PrimeAPIError } from './api';
import { HarnessView } from './harness';
import { ExportOptions } from './export';
import { agentsIcon } from './icons';
import {
  consoleAvailability,
  exportBaseName,
  exportChoices,
  exportedNotebook,
  exportPath,
  ISession,
  isTerminal,
  sessionLabel
} from './model';
import { AgentsPanel } from './panel';
import { answerCapabilityRequests, sandboxBadge } from './security';
import { SessionView } from './session';
import { AgentsStore } from './store';

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

const PALETTE_CATEGORY = 'Prime Agents';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'prime-kernel:plugin',
  description: 'The Agents panel: prime_kernel agent sessions, their trajectories and controls.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const { commands, shell, serviceManager } = app;
    const api = new PrimeAPI(serviceManager.serverSettings);
    const store = new AgentsStore(api, { events: serviceManager.events });
    const tracker = new WidgetTracker<MainAreaWidget<SessionView>>({
      namespace: 'prime-kernel-session'
    });
    const harnessTracker = new WidgetTracker<MainAreaWidget<HarnessView>>({
      namespace: 'prime-kernel-harness'
    });
    let harness = false;

    /** The session a command applies to: args.id, the row under the context menu, or the current view. */
    const resolve = (args: ReadonlyPartialJSONObject): ISession | undefined => {
      let id = typeof args.id === 'string' ? args.id : undefined;
      if (!id) {
        const row = app.contextMenuHitTest(n => n.classList.contains('jp-PrimeAgents-row'));
        id = row?.dataset.sessionId;
      }
      if (!id) {
        const current = tracker.currentWidget;
        if (current && shell.currentWidget === current) {
          id = current.content.sessionId;
        }
      }
      return id ? store.get(id) : undefined;
    };

    const actions: IAgentActions = {
      openSession: (id: string) => {
        void commands.execute(CommandIDs.openSession, { id });
      },
      openConsole: async (s: ISession) => {
        // The button follows the listed `kernel_alive`; the session's own record is fresher
        // (the list only changes when the store refetches).
        const { enabled, reason } = consoleAvailability(await api.getSession(s.id));
        if (!enabled) {
          void store.requestRefresh();
          await showErrorMessage('No kernel', `Cannot open a console: ${reason}.`);
          return;
        }
        const view = tracker.find(w => w.content.sessionId === s.id);
        await commands.execute('console:create', {
          name: `Agent: ${sessionLabel(s, 5)}`,
          ...(view && view.isAttached ? { ref: view.id, insertMode: 'split-bottom' } : {}),
          kernelPreference: {
            id: s.kernel_id,
            shouldStart: true,
            canStart: true,
            autoStartDefault: false,
            shutdownOnDispose: false
          },
          activate: true
        });
      },
      exportNotebook: async (s: ISession) => {
        let subtree = false;
        let withContext = false;
        const choices = exportChoices(s, store.sessions);
        if (choices.subtree || choices.withContext) {
          const choice = await showDialog({
            title: 'Export as notebook',
            body: new ExportOptions(choices),
            buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Export' })]
          });
          if (!choice.button.accept || !choice.value) {
            return;
          }
          subtree = choice.value.subtree;
          withContext = choice.value.with_context;
        }
        const base = exportBaseName(s);
        // Never overwrite: the server refuses an existing target (409), so try the next name.
        for (let attempt = 0; ; attempt++) {
          try {
            const result = await api.exportNotebook(s.id, {
              path: exportPath(base, subtree, attempt),
              subtree,
              force: false,
              with_context: withContext
            });
            await commands.execute('docmanager:open', { path: exportedNotebook(result, s.id) });
            return;
          } catch (err) {
            if (!(err instanceof PrimeAPIError && err.status === 409) || attempt >= 50) {
              throw err;
            }
          }
        }
      },
      cancel: async (s: ISession) => {
        const running = store.sessions.filter(
          c => c.root_id === s.root_id && c.id !== s.id && !isTerminal(c.state)
        ).length;
        const result = await showDialog({
          title: 'Cancel agent?',
          body: `Cancel “${sessionLabel(s)}”${running ? ` and its sub-agents` : ''}? This cannot be undone.`,
          buttons: [
            Dialog.cancelButton({ label: 'Keep running' }),
            Dialog.warnButton({ label: 'Cancel agent' })
          ]
        });
        if (!result.button.accept) {
          return;
        }
        await api.cancelSession(s.id);
        await store.refresh();
      },
      interrupt: async (s: ISession) => {
        await api.interrupt(s.id);
        void store.requestRefresh();
      },
      refine: async (s: ISession) => {
        const view = (await commands.execute(CommandIDs.openHarness)) as MainAreaWidget<HarnessView>;
        await view.content.refine({ session_id: s.id });
      }
    };

    const guard =
      (title: string, fn: (s: ISession) => Promise<void>) =>
      async (args: ReadonlyPartialJSONObject) => {
        const s = resolve(args);
        if (!s) {
          return;
        }
        try {
          await fn(s);
        } catch (err) {
          await showErrorMessage(title, (err as Error).message || String(err));
        }
      };

    // -- the side panel ---------------------------------------------------
    const panel = new AgentsPanel(store, actions);
    shell.add(panel, 'left', { rank: 600, type: 'Agents' });
    if (restorer) {
      restorer.add(panel, 'prime-kernel-agents');
      void restorer.restore(tracker, {
        command: CommandIDs.openSession,
        args: w => ({ id: w.content.sessionId }),
        name: w => w.content.sessionId
      });
    }
    void api
      .status()
      .then(status => panel.addToolbarItem('sandbox', sandboxBadge(status.sandbox)))
      .catch(() => undefined); // an older server: no badge
    answerCapabilityRequests(app, api);
    void store.harnessAvailable().then(ok => {
      harness = ok;
      commands.notifyCommandChanged(CommandIDs.refine);
      commands.notifyCommandChanged(CommandIDs.openHarness);
      if (ok) {
        panel.addToolbarItem(
          'harness',
          new CommandToolbarButton({ commands, id: CommandIDs.openHarness, label: 'Harness' })
        );
      }
    });
    store.changed.connect(() => {
      for (const id of [CommandIDs.interrupt, CommandIDs.cancel, CommandIDs.openConsole, CommandIDs.sendMessage]) {
        commands.notifyCommandChanged(id);
      }
    });

    // -- commands ---------------------------------------------------------
    commands.addCommand(CommandIDs.openAgents, {
      label: 'Open Agents Panel',
      caption: 'Show the Prime agent sessions',
      icon: args => (args.isPalette ? undefined : agentsIcon),
      execute: () => shell.activateById(panel.id)
    });
    commands.addCommand(CommandIDs.newAgent, {
      label: 'New Agent…',
      caption: 'Start a new root agent',
      icon: args => (args.isPalette ? undefined : addIcon),
      execute: () => {
        shell.activateById(panel.id);
        panel.showForm(true);
      }
    });
    commands.addCommand(CommandIDs.openHarness, {
      label: 'Open Agent Harness',
      caption: 'Notes, memories, skills and specs every agent gets; their history and refinements',
      icon: args => (args.isPalette ? undefined : buildIcon),
      isEnabled: () => harness,
      execute: () => {
        const existing = harnessTracker.currentWidget;
        if (existing && !existing.isDisposed) {
          shell.activateById(existing.id);
          void existing.content.refresh();
          return existing;
        }
        const content = new HarnessView({
          api,
          serverRoot: PageConfig.getOption('serverRoot'),
          openFile: async path => {
            // The contents API refuses hidden paths (.prime/...) unless the server allows them.
            await serviceManager.contents.get(path, { content: false });
            await commands.execute('docmanager:open', { path, factory: 'Editor' });
          }
        });
        const widget = new MainAreaWidget({ content });
        widget.id = 'prime-kernel-harness-view';
        widget.title.label = 'Agent Harness';
        widget.title.icon = buildIcon;
        widget.title.closable = true;
        void harnessTracker.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      }
    });
    commands.addCommand(CommandIDs.refresh, {
      label: 'Refresh Agents',
      icon: args => (args.isPalette ? undefined : refreshIcon),
      execute: async () => {
        await store.refresh();
        const current = tracker.currentWidget;
        if (current) {
          await current.content.refresh();
        }
      }
    });
    commands.addCommand(CommandIDs.openSession, {
      label: args => (args.id ? `Open Agent ${args.id}` : 'Open Agent'),
      execute: args => {
        const id = (args.id as string) || resolve(args)?.id;
        if (!id) {
          return;
        }
        const existing = tracker.find(w => w.content.sessionId === id);
        if (existing) {
          shell.activateById(existing.id);
          return existing;
        }
        const content = new SessionView({
          sessionId: id,
          store,
          api,
          rendermime,
          openSession: actions.openSession
        });
        const widget = new MainAreaWidget({ content });
        widget.id = `prime-kernel-session-${id}`;
        widget.title.icon = agentsIcon;
        widget.title.closable = true;
        content.title.changed.connect(() => {
          widget.title.label = content.title.label;
          widget.title.caption = content.title.caption;
        });
        widget.title.label = content.title.label || `Agent ${id}`;
        const button = (cmd: string, label: string) =>
          new CommandToolbarButton({ commands, id: cmd, args: { id }, label });
        widget.toolbar.addItem('interrupt', button(CommandIDs.interrupt, 'Interrupt'));
        widget.toolbar.addItem('cancel', button(CommandIDs.cancel, 'Cancel'));
        widget.toolbar.addItem('console', button(CommandIDs.openConsole, 'Console'));
        widget.toolbar.addItem('export', button(CommandIDs.exportNotebook, 'Export'));
        widget.toolbar.addItem('refine', button(CommandIDs.refine, 'Refine'));
        widget.toolbar.addItem(
          'refresh',
          new CommandToolbarButton({ commands, id: CommandIDs.refresh, label: '' })
        );
        void tracker.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      }
    });
    const sessionCommand = (
      id: string,
      opts: {
        label: string;
        caption: string | ((s: ISession | undefined) => string);
        icon: any;
        enabled: (s: ISession) => boolean;
        visible?: () => boolean;
        run: (s: ISession) => Promise<void>;
      }
    ) =>
      commands.addCommand(id, {
        label: opts.label,
        caption: args => {
          const caption = opts.caption;
          return typeof caption === 'string' ? caption : caption(resolve(args));
        },
        icon: args => (args.isPalette ? undefined : opts.icon),
        isEnabled: args => {
          const s = resolve(args);
          return !!s && opts.enabled(s);
        },
        isVisible: opts.visible ? () => opts.visible!() : undefined,
        execute: guard(opts.label, opts.run)
      });
    sessionCommand(CommandIDs.interrupt, {
      label: 'Interrupt Agent',
      caption: 'Interrupt the running turn of this agent',
      icon: stopIcon,
      enabled: s => s.state === 'RUNNING',
      run: actions.interrupt
    });
    sessionCommand(CommandIDs.cancel, {
      label: 'Cancel Agent',
      caption: 'Cancel this agent and its sub-agents',
      icon: closeIcon,
      enabled: s => !isTerminal(s.state),
      run: actions.cancel
    });
    sessionCommand(CommandIDs.openConsole, {
      label: 'Open Agent Console',
      caption: s => {
        const reason = s ? consoleAvailability(s).reason : '';
        return reason || "Attach a console to this agent's kernel (co-work in its namespace)";
      },
      icon: consoleIcon,
      // An ended root keeps its kernel a while for co-working (Daemon.keep_root_kernel);
      // the session's `kernel_alive` says whether it still runs.
      enabled: s => consoleAvailability(s).enabled,
      run: actions.openConsole
    });
    sessionCommand(CommandIDs.exportNotebook, {
      label: 'Export Agent as Notebook',
      caption: 'Export the trajectory as a notebook and open it',
      icon: downloadIcon,
      enabled: () => true,
      run: actions.exportNotebook
    });
    sessionCommand(CommandIDs.refine, {
      label: 'Refine Harness from Agent',
      caption: "Turn this agent's trajectory into harness edits",
      icon: buildIcon,
      enabled: () => harness,
      visible: () => harness,
      run: actions.refine
    });
    sessionCommand(CommandIDs.sendMessage, {
      label: 'Message Agent…',
      caption: 'Send a message to this agent',
      icon: undefined,
      enabled: s => !isTerminal(s.state),
      run: async s => {
        const result = await InputDialog.getText({
          title: `Message “${sessionLabel(s, 5)}”`,
          placeholder: 'Your message'
        });
        if (result.button.accept && result.value && result.value.trim()) {
          await api.sendMessage(s.id, result.value.trim());
        }
      }
    });

    // -- palette and context menu ----------------------------------------
    if (palette) {
      for (const command of [
        CommandIDs.openAgents,
        CommandIDs.newAgent,
        CommandIDs.refresh,
        CommandIDs.interrupt,
        CommandIDs.cancel,
        CommandIDs.openConsole,
        CommandIDs.exportNotebook,
        CommandIDs.sendMessage,
        CommandIDs.refine,
        CommandIDs.openHarness
      ]) {
        palette.addItem({ command, category: PALETTE_CATEGORY, args: { isPalette: true } });
      }
    }
    const selector = '.jp-PrimeAgents-row';
    let rank = 0;
    for (const command of [
      CommandIDs.openSession,
      CommandIDs.sendMessage,
      CommandIDs.interrupt,
      CommandIDs.cancel,
      CommandIDs.openConsole,
      CommandIDs.exportNotebook,
      CommandIDs.refine
    ]) {
      app.contextMenu.addItem({ command, selector, rank: rank++ });
    }

    void store.refresh();
  }
};

export default plugin;
