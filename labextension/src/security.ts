/**
 * How agents are confined here, and capabilities for notebooks that ask for agents.
 *
 * - A badge in the Agents panel's toolbar: the sandbox mode of agent kernels
 *   (GET /api/prime/status); its tooltip says what that mode protects and what it does not.
 * - `%load_ext prime_kernel` in a kernel without a capability opens a comm
 *   (prime_kernel/kernel/capability.py); this answers it for the person using the notebook or
 *   console, by asking the server (their own authenticated session) for a token bound to
 *   that kernel and sending it back over the comm.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import type { IPrimeAPI, ISandboxStatus } from './tokens';

export const CAPABILITY_TARGET = 'prime_kernel.capability';

/** The toolbar badge for `status`. */
export function sandboxBadge(status: ISandboxStatus, trans: TranslationBundle): Widget {
  const node = document.createElement('span');
  const sandboxed = status.mode === 'bwrap' && !!status.bwrap;
  node.className = `jp-PrimeAgents-sandbox jp-PrimeAgents-sandbox-${sandboxed ? 'on' : 'off'}`;
  node.textContent = sandboxed ? trans.__('sandboxed') : trans.__('no sandbox');
  const lines = [
    sandboxed
      ? status.network
        ? trans.__('Agent kernels run in a bubblewrap sandbox (with network).')
        : trans.__('Agent kernels run in a bubblewrap sandbox (without network).')
      : trans.__('Agent kernels run without a sandbox: %1.', status.reason || trans.__('disabled')),
    trans.__('Protects:'),
    ...status.protects.map(p => `  • ${p}`),
    trans.__('Does not protect:'),
    ...status.exposes.map(p => `  • ${p}`)
  ];
  node.title = lines.join('\n');
  return new Widget({ node });
}

/** Answer capability requests from the kernels of notebooks and consoles in the main area. */
export function answerCapabilityRequests(app: JupyterFrontEnd, api: IPrimeAPI): void {
  const watched = new WeakSet<ISessionContext>();
  const registered = new WeakSet<Kernel.IKernelConnection>();

  const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
    if (!kernel || registered.has(kernel)) {
      return;
    }
    registered.add(kernel);
    kernel.registerCommTarget(CAPABILITY_TARGET, comm => {
      api
        .capability(kernel.id)
        .then(grant => comm.send({ url: grant.url, token: grant.token }))
        .catch(err => comm.send({ error: (err as Error).message || String(err) }))
        .finally(() => {
          if (!comm.isDisposed) {
            comm.close();
          }
        });
    });
  };

  const scan = () => {
    for (const widget of app.shell.widgets('main')) {
      const context = (widget as Widget & { sessionContext?: ISessionContext }).sessionContext;
      if (!context || watched.has(context)) {
        continue;
      }
      watched.add(context);
      context.kernelChanged.connect((_, change) => register(change.newValue));
      register(context.session?.kernel);
    }
  };
  app.shell.currentChanged?.connect(scan);
  void app.restored.then(scan);
}
