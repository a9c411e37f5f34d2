import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { PrimeAPI } from './api';
import { AgentsPanel } from './panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'prime-kernel:plugin',
  description: 'Agents panel for prime_kernel sessions.',
  autoStart: true,
  optional: [ILabShell],
  activate: (app: JupyterFrontEnd) => {
    const api = new PrimeAPI(app.serviceManager.serverSettings);
    const panel = new AgentsPanel(api);
    app.shell.add(panel, 'left', { rank: 600 });
  }
};

export default plugin;
