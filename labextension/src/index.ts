/**
 * The prime_kernel JupyterLab extension, as plugins that provide tokens (tokens.ts) to each
 * other and to other extensions: the REST client, the settings, the live session list, the
 * trajectory event renderers, the Agents panel, the session views, the harness view, and the
 * actions on a session.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { CommandToolbarButton, ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, buildIcon, refreshIcon } from '@jupyterlab/ui-components';

import { PrimeAPI } from './api';
import { addSessionCommands, addToPalette, CommandIDs, ROW_SELECTOR } from './commands';
import { HarnessView } from './harness';
import { HarnessModel } from './harnessModel';
import { DOMAIN } from './i18n';
import { agentsIcon } from './icons';
import { AgentsPanel } from './panel';
import { EventRendererRegistry } from './renderers';
import { answerCapabilityRequests, sandboxBadge } from './security';
import { SessionView } from './session';
import { SessionModel } from './sessionModel';
import { SessionsModel } from './sessionsModel';
import { PrimeSettings, SETTINGS_ID } from './settings';
import {
  IPrimeAgentsPanel,
  IPrimeAPI,
  IPrimeEventRenderers,
  IPrimeHarness,
  IPrimeSessions,
  IPrimeSessionViews,
  IPrimeSettings,
  ISessionView
} from './tokens';

export * from './tokens';

function bundle(translator: ITranslator | null): TranslationBundle {
  return (translator ?? nullTranslator).load(DOMAIN);
}

const api: JupyterFrontEndPlugin<IPrimeAPI> = {
  id: 'prime-kernel:api',
  description: 'The REST client of the prime_kernel daemon.',
  autoStart: true,
  provides: IPrimeAPI,
  activate: (app: JupyterFrontEnd) => new PrimeAPI(app.serviceManager.serverSettings)
};

const settings: JupyterFrontEndPlugin<IPrimeSettings> = {
  id: SETTINGS_ID,
  description: 'The settings of the Agents panel.',
  autoStart: true,
  provides: IPrimeSettings,
  optional: [ISettingRegistry],
  activate: async (_: JupyterFrontEnd, registry: ISettingRegistry | null) => {
    const values = new PrimeSettings();
    if (registry) {
      try {
        values.connect(await registry.load(SETTINGS_ID));
      } catch (err) {
        console.warn('prime-kernel: the settings could not be loaded; using the defaults', err);
      }
    }
    return values;
  }
};

const sessions: JupyterFrontEndPlugin<IPrimeSessions> = {
  id: 'prime-kernel:sessions',
  description: 'The agent sessions, updated live from the server’s push events.',
  autoStart: true,
  provides: IPrimeSessions,
  requires: [IPrimeAPI, IPrimeSettings],
  activate: (app: JupyterFrontEnd, client: IPrimeAPI, values: IPrimeSettings) => {
    const model = new SessionsModel({
      api: client,
      events: app.serviceManager.events,
      pollInterval: values.refreshInterval
    });
    values.changed.connect(() => {
      if (model.pollInterval !== values.refreshInterval) {
        model.pollInterval = values.refreshInterval;
      }
    });
    void model.refresh();
    return model;
  }
};

const renderers: JupyterFrontEndPlugin<IPrimeEventRenderers> = {
  id: 'prime-kernel:renderers',
  description: 'The renderer of each trajectory event kind.',
  autoStart: true,
  provides: IPrimeEventRenderers,
  activate: () => new EventRendererRegistry()
};

const panel: JupyterFrontEndPlugin<IPrimeAgentsPanel> = {
  id: 'prime-kernel:panel',
  description: 'The Agents side panel: the tree of sessions and the New agent form.',
  autoStart: true,
  provides: IPrimeAgentsPanel,
  requires: [IPrimeSessions, IPrimeSettings],
  optional: [ITranslator, ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    model: IPrimeSessions,
    values: IPrimeSettings,
    translator: ITranslator | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const { commands, shell } = app;
    const trans = bundle(translator);
    const widget = new AgentsPanel({
      sessions: model,
      settings: values,
      trans,
      openSession: id => void commands.execute(CommandIDs.openSession, { id })
    });
    shell.add(widget, 'left', { rank: 600, type: 'Agents' });
    restorer?.add(widget, 'prime-kernel-agents');

    commands.addCommand(CommandIDs.openAgents, {
      label: trans.__('Open Agents Panel'),
      caption: trans.__('Show the Prime agent sessions'),
      icon: args => (args.isPalette ? undefined : agentsIcon),
      execute: () => shell.activateById(widget.id)
    });
    commands.addCommand(CommandIDs.newAgent, {
      label: trans.__('New Agent…'),
      caption: trans.__('Start a new root agent'),
      icon: args => (args.isPalette ? undefined : addIcon),
      execute: () => {
        shell.activateById(widget.id);
        widget.showForm(true);
      }
    });
    commands.addCommand(CommandIDs.refresh, {
      label: trans.__('Refresh Agents'),
      icon: args => (args.isPalette ? undefined : refreshIcon),
      execute: () => model.refresh()
    });
    addToPalette(palette, trans, [CommandIDs.openAgents, CommandIDs.newAgent, CommandIDs.refresh]);
    return widget;
  }
};

const sessionViews: JupyterFrontEndPlugin<IPrimeSessionViews> = {
  id: 'prime-kernel:session-views',
  description: 'The main-area view of a session: its trajectory, usage and messages.',
  autoStart: true,
  provides: IPrimeSessionViews,
  requires: [IPrimeSessions, IPrimeAPI, IPrimeEventRenderers, IRenderMimeRegistry],
  optional: [ITranslator, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    model: IPrimeSessions,
    client: IPrimeAPI,
    registry: IPrimeEventRenderers,
    rendermime: IRenderMimeRegistry,
    translator: ITranslator | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands, shell } = app;
    const trans = bundle(translator);
    const tracker = new WidgetTracker<MainAreaWidget<ISessionView>>({ namespace: 'prime-kernel-session' });

    const open = (id: string): MainAreaWidget<ISessionView> => {
      const existing = tracker.find(w => w.content.sessionId === id);
      if (existing) {
        shell.activateById(existing.id);
        return existing;
      }
      const content = new SessionView({
        model: new SessionModel({ id, sessions: model, api: client }),
        renderers: registry,
        rendermime,
        trans,
        openSession: child => void commands.execute(CommandIDs.openSession, { id: child }),
        openRefinement: rid => void commands.execute(CommandIDs.openHarness, { refinement: rid })
      });
      const widget = new MainAreaWidget({ content });
      widget.id = `prime-kernel-session-${id}`;
      widget.title.icon = agentsIcon;
      widget.title.closable = true;
      content.title.changed.connect(() => {
        widget.title.label = content.title.label;
        widget.title.caption = content.title.caption;
      });
      widget.title.label = content.title.label || trans.__('Agent %1', id);
      const button = (command: string, label: string) => new CommandToolbarButton({ commands, id: command, args: { id }, label });
      widget.toolbar.addItem('interrupt', button(CommandIDs.interrupt, trans.__('Interrupt')));
      widget.toolbar.addItem('cancel', button(CommandIDs.cancel, trans.__('Cancel')));
      widget.toolbar.addItem('console', button(CommandIDs.openConsole, trans.__('Console')));
      widget.toolbar.addItem('export', button(CommandIDs.exportNotebook, trans.__('Export')));
      widget.toolbar.addItem('refine', button(CommandIDs.refine, trans.__('Refine')));
      widget.toolbar.addItem('refresh', button(CommandIDs.refresh, ''));
      void tracker.add(widget);
      shell.add(widget, 'main');
      shell.activateById(widget.id);
      return widget;
    };

    commands.addCommand(CommandIDs.openSession, {
      label: args => (args.id ? trans.__('Open Agent %1', args.id) : trans.__('Open Agent')),
      execute: args => {
        const row = app.contextMenuHitTest(n => n.matches(ROW_SELECTOR));
        const id = (args.id as string | undefined) || row?.dataset.sessionId;
        return id ? open(id) : undefined;
      }
    });
    // The refresh command (the panel's) also brings the session in front up to date.
    commands.commandExecuted.connect((_, executed) => {
      if (executed.id === CommandIDs.refresh) {
        void tracker.currentWidget?.content.model.refresh();
      }
    });
    void restorer?.restore(tracker, {
      command: CommandIDs.openSession,
      args: w => ({ id: w.content.sessionId }),
      name: w => w.content.sessionId
    });
    app.contextMenu.addItem({ command: CommandIDs.openSession, selector: ROW_SELECTOR, rank: 0 });
    return { tracker, open };
  }
};

const harness: JupyterFrontEndPlugin<IPrimeHarness> = {
  id: 'prime-kernel:harness',
  description: 'The Harness view: notes, memories, skills and sub-agents, their history and refinements.',
  autoStart: true,
  provides: IPrimeHarness,
  requires: [IPrimeAPI],
  optional: [ITranslator, IPrimeAgentsPanel, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    client: IPrimeAPI,
    translator: ITranslator | null,
    agents: IPrimeAgentsPanel | null,
    palette: ICommandPalette | null
  ) => {
    const { commands, shell, serviceManager } = app;
    const trans = bundle(translator);
    const model = new HarnessModel(client);
    const tracker = new WidgetTracker<MainAreaWidget<HarnessView>>({ namespace: 'prime-kernel-harness' });
    let available = false;

    commands.addCommand(CommandIDs.openHarness, {
      label: trans.__('Open Agent Harness'),
      caption: trans.__('Notes, memories, skills and sub-agents every agent gets; their history and refinements'),
      icon: args => (args.isPalette ? undefined : buildIcon),
      isEnabled: () => available,
      execute: async args => {
        let widget = tracker.currentWidget;
        if (widget && !widget.isDisposed) {
          shell.activateById(widget.id);
          await widget.content.refresh();
        } else {
          const content = new HarnessView({
            model,
            trans,
            serverRoot: PageConfig.getOption('serverRoot'),
            openFile: async path => {
              // The contents API refuses hidden paths (.prime/...) unless the server allows them.
              await serviceManager.contents.get(path, { content: false });
              await commands.execute('docmanager:open', { path, factory: 'Editor' });
            }
          });
          widget = new MainAreaWidget({ content });
          widget.id = 'prime-kernel-harness-view';
          widget.title.label = trans.__('Agent Harness');
          widget.title.icon = buildIcon;
          widget.title.closable = true;
          void tracker.add(widget);
          shell.add(widget, 'main');
          shell.activateById(widget.id);
          await content.refresh();
        }
        if (typeof args.refinement === 'string') {
          widget.content.showRefinement(args.refinement);
        }
        if (typeof args.refineFrom === 'string') {
          await widget.content.refine({ session_id: args.refineFrom });
        }
        return widget;
      }
    });
    addToPalette(palette, trans, [CommandIDs.openHarness]);
    void model.available().then(ok => {
      available = ok;
      commands.notifyCommandChanged(CommandIDs.openHarness);
      commands.notifyCommandChanged(CommandIDs.refine);
      if (ok) {
        agents?.addToolbarItem(
          'harness',
          new CommandToolbarButton({ commands, id: CommandIDs.openHarness, label: trans.__('Harness') })
        );
      }
    });
    return model;
  }
};

const sessionCommands: JupyterFrontEndPlugin<void> = {
  id: 'prime-kernel:commands',
  description: 'Actions on a session: interrupt, cancel, console, export, message, refine.',
  autoStart: true,
  requires: [IPrimeSessions, IPrimeAPI, IPrimeSessionViews, IPrimeSettings],
  optional: [ITranslator, IPrimeHarness, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    model: IPrimeSessions,
    client: IPrimeAPI,
    views: IPrimeSessionViews,
    values: IPrimeSettings,
    translator: ITranslator | null,
    harnessModel: IPrimeHarness | null,
    palette: ICommandPalette | null
  ) => {
    const trans = bundle(translator);
    let harnessServed = false;
    void harnessModel?.available().then(ok => {
      harnessServed = ok;
    });
    const ids = addSessionCommands(app, {
      sessions: model,
      api: client,
      views,
      settings: values,
      trans,
      harness: () => harnessServed
    });
    addToPalette(palette, trans, ids);
    ids.forEach((command, i) => app.contextMenu.addItem({ command, selector: ROW_SELECTOR, rank: i + 1 }));
  }
};

const security: JupyterFrontEndPlugin<void> = {
  id: 'prime-kernel:security',
  description: 'The sandbox badge of the Agents panel, and capabilities for notebooks that ask for agents.',
  autoStart: true,
  requires: [IPrimeAPI],
  optional: [ITranslator, IPrimeAgentsPanel],
  activate: (app: JupyterFrontEnd, client: IPrimeAPI, translator: ITranslator | null, agents: IPrimeAgentsPanel | null) => {
    const trans = bundle(translator);
    if (agents) {
      void client
        .status()
        .then(status => agents.addToolbarItem('sandbox', sandboxBadge(status.sandbox, trans)))
        .catch(() => undefined); // an older server: no badge
    }
    answerCapabilityRequests(app, client);
  }
};

export default [api, settings, sessions, renderers, panel, sessionViews, harness, sessionCommands, security];
