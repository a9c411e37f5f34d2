/**
 * The Agents panel against a real server: jupyter_server + the prime_kernel daemon, real kernels,
 * and the deterministic scripted models of ../scripts.json. Tests run in order on one server.
 */
import { expect, Page, test } from '@playwright/test';

test.describe.configure({ mode: 'serial' });

async function openLab(page: Page): Promise<void> {
  await page.goto('/lab?reset');
  await page.waitForFunction(
    () => (window as any).jupyterapp?.commands.hasCommand('prime-kernel:open-agents'),
    null,
    { timeout: 60_000 }
  );
  await page.evaluate(() => (window as any).jupyterapp.restored);
}

async function run(page: Page, command: string, args: Record<string, unknown> = {}) {
  return page.evaluate(
    ([c, a]) => (window as any).jupyterapp.commands.execute(c, a).then(() => undefined),
    [command, args] as const
  );
}

const panel = (page: Page) => page.locator('.jp-PrimeAgents');
const rows = (page: Page) => page.locator('.jp-PrimeAgents-row');
const sessionView = (page: Page) => page.locator('.jp-PrimeSession:visible');

test('empty state, then a new agent appears at once and its trajectory streams in', async ({ page }) => {
  await openLab(page);
  await page.keyboard.press('ControlOrMeta+Shift+y');
  await expect(panel(page)).toBeVisible();
  await expect(page.locator('.jp-PrimeAgents-empty')).toContainText('No agent sessions yet');

  await page.keyboard.press('ControlOrMeta+Alt+n');
  const prompt = page.locator('.jp-PrimeAgents-prompt');
  await expect(prompt).toBeVisible();
  await expect(page.locator('.jp-PrimeAgents-form option[value="scripted/ui-root"]')).toHaveCount(1);
  await prompt.fill('Compute 6*7 and ask a child to double 21');
  await page.locator('.jp-PrimeAgents-form select').selectOption('scripted/ui-root');
  await page.getByRole('button', { name: 'Start' }).click();

  // The new root is in the tree right away (before any push event or poll).
  await expect(rows(page).filter({ hasText: 'Compute 6*7' })).toHaveCount(1, { timeout: 3000 });

  // Its view opens and reaches DONE with the answer.
  const view = sessionView(page);
  await expect(view).toHaveAttribute('data-state', 'DONE', { timeout: 90_000 });
  await expect(view.locator('.jp-PrimeSession-answer')).toContainText('42');
  await expect(view.locator('.jp-PrimeEvent-task')).toContainText('Compute 6*7');
  await expect(view.locator('.jp-PrimeEvent-assistant').first()).toContainText('compute');
  // Cell outputs go through rendermime.
  await expect(view.locator('.jp-PrimeEvent-cell .jp-OutputArea').first()).toContainText('x is 42');
  await expect(view.locator('.jp-PrimeEvent-answer')).toContainText('42');

  // The child is nested under the root, with own and subtree usage on the root.
  const root = rows(page).filter({ hasText: 'Compute 6*7' });
  const child = rows(page).filter({ hasText: 'child: double 21' });
  await expect(root).toHaveAttribute('aria-level', '1');
  await expect(child).toHaveAttribute('aria-level', '2');
  await expect(child).toHaveAttribute('data-state', 'DONE');
  await expect(root.locator('.jp-PrimeAgents-tokens')).toContainText('Σ');
  await expect(root.locator('.jp-PrimeAgents-badge')).toHaveText('DONE');

  // "spawned sub-agent" opens the child's own view.
  await view.locator('.jp-PrimeEvent-child a').click();
  await expect(sessionView(page).locator('.jp-PrimeSession-title')).toContainText('child: double 21');
  await expect(sessionView(page).locator('.jp-PrimeSession-answer')).toContainText('42');
});

test('filter by state and text, collapse subtrees', async ({ page }) => {
  await openLab(page);
  await run(page, 'prime-kernel:open-agents');
  await expect(rows(page)).toHaveCount(2);

  // Collapse the root: the child row goes, the root shows how many it hides.
  await rows(page).first().locator('.jp-PrimeAgents-caret').click();
  await expect(rows(page)).toHaveCount(1);
  await expect(rows(page).first().locator('.jp-PrimeAgents-more')).toHaveText('+1');
  await rows(page).first().locator('.jp-PrimeAgents-caret').click();
  await expect(rows(page)).toHaveCount(2);

  // Text filter keeps the matching child and its ancestor (dimmed as context).
  await page.locator('.jp-PrimeAgents-search').fill('child:');
  await expect(rows(page)).toHaveCount(2);
  await expect(rows(page).first()).toHaveClass(/jp-mod-context/);
  await page.locator('.jp-PrimeAgents-search').fill('no such agent');
  await expect(page.locator('.jp-PrimeAgents-empty')).toContainText('No sessions match');
  await page.locator('.jp-PrimeAgents-search').fill('');

  // State chips.
  await page.locator('.jp-PrimeAgents-chip[data-state-filter="DONE"]').click();
  await expect(rows(page)).toHaveCount(2);
  await page.locator('.jp-PrimeAgents-chip[data-state-filter="*"]').click();
  await expect(page.locator('.jp-PrimeAgents-chip[data-state-filter="RUNNING"]')).toHaveCount(0);
});

test('a running agent: console on its kernel, message, cancel', async ({ page, request }) => {
  await openLab(page);
  await run(page, 'prime-kernel:open-agents');
  const created = await request.post('/api/prime/sessions', {
    data: { prompt: 'Think slowly about nothing', model: 'scripted/ui-slow', name: 'slow thinker' }
  });
  expect(created.status()).toBe(201);
  const session = await created.json();

  // Started outside the UI: it shows up through push events / refetch.
  const row = rows(page).filter({ hasText: 'slow thinker' });
  await expect(row).toHaveCount(1, { timeout: 15_000 });
  await expect(row).toHaveAttribute('data-state', 'RUNNING', { timeout: 60_000 });
  await row.click();
  const view = sessionView(page);
  await expect(view.locator('.jp-PrimeEvent-cell .jp-OutputArea')).toContainText('yes', { timeout: 60_000 });

  // Open a console on the agent's kernel: the user works in the agent's namespace.
  const info = await (await request.get(`/api/prime/sessions/${session.id}`)).json();
  expect(info.kernel_id).toBeTruthy();
  await page.locator('.jp-MainAreaWidget:visible .jp-Toolbar-item', { hasText: 'Console' }).click();
  const consolePanel = page.locator('.jp-ConsolePanel:visible');
  await expect(consolePanel).toBeVisible();
  await expect
    .poll(async () => {
      const sessions = await (await request.get('/api/sessions')).json();
      return sessions.map((s: any) => s.kernel.id);
    })
    .toContain(info.kernel_id);
  await consolePanel.locator('.jp-CodeConsole-input .cm-content').click();
  await page.keyboard.type('ready * 2');
  await page.keyboard.press('Shift+Enter');
  await expect(consolePanel.locator('.jp-OutputArea-output').last()).toContainText('yesyes');

  // Message the agent (skipped while the server has no messages endpoint).
  const probe = await request.post(`/api/prime/sessions/${session.id}/messages`, {
    data: { message: 'probe' }
  });
  if (probe.status() !== 404 && probe.status() !== 405) {
    await view.locator('.jp-PrimeSession-input').fill('hello from the UI test');
    await view.locator('.jp-PrimeSession-input').press('Enter');
    await expect(view.locator('.jp-PrimeSession-status')).toContainText('Message sent');
  }

  // Cancel with confirmation.
  await page.locator('.jp-MainAreaWidget:visible .jp-Toolbar-item', { hasText: 'Cancel' }).first().click();
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Cancel agent' }).click();
  await expect(row).toHaveAttribute('data-state', 'CANCELLED', { timeout: 30_000 });
  await expect(view).toHaveAttribute('data-state', 'CANCELLED');
});

test('palette commands and dark theme', async ({ page }) => {
  await openLab(page);
  await page.keyboard.press('ControlOrMeta+Shift+c');
  await page.keyboard.type('Prime Agents');
  const palette = page.locator('.lm-CommandPalette');
  for (const label of ['Open Agents Panel', 'New Agent…', 'Refresh Agents']) {
    await expect(palette.getByText(label, { exact: true })).toBeVisible();
  }
  await page.keyboard.press('Escape');
  await run(page, 'apputils:change-theme', { theme: 'JupyterLab Dark' });
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'false');
  await run(page, 'prime-kernel:open-agents');
  // Badges still use theme variables: the DONE badge is not transparent.
  const bg = await page
    .locator('.jp-PrimeAgents-badge.jp-PrimeAgents-state-DONE')
    .first()
    .evaluate(el => getComputedStyle(el).backgroundColor);
  expect(bg).not.toBe('rgba(0, 0, 0, 0)');
  await run(page, 'apputils:change-theme', { theme: 'JupyterLab Light' });
});
