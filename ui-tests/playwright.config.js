// Browser tests of the Agents panel against a real jupyter_server + prime_kernel daemon.
// Headless Debian Chromium (`which chromium`, or PRIME_UI_CHROMIUM); no browser download.
const { execSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { defineConfig } = require('@playwright/test');

const port = Number(process.env.PRIME_UI_PORT || 8877);

// The scripted models the server replays: written once per run, before the server starts.
if (!process.env.PRIME_SCRIPTS) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prime-ui-scripts-'));
  process.env.PRIME_SCRIPTS = path.join(dir, 'scripts.json');
  fs.writeFileSync(process.env.PRIME_SCRIPTS, JSON.stringify(require('./scripts'), null, 1));
  // Where the server notes when the scripted models send each piece of a streamed reply.
  process.env.PRIME_UI_PIECES = path.join(dir, 'pieces.jsonl');
}

function chromium() {
  if (process.env.PRIME_UI_CHROMIUM) {
    return process.env.PRIME_UI_CHROMIUM;
  }
  try {
    return execSync('which chromium', { encoding: 'utf-8' }).trim();
  } catch {
    throw new Error('no `chromium` on PATH: apt-get install -y chromium (or set PRIME_UI_CHROMIUM)');
  }
}

module.exports = defineConfig({
  testDir: './tests',
  outputDir: './test-results',
  timeout: 180_000,
  expect: { timeout: 30_000 },
  retries: 0,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://localhost:${port}`,
    viewport: { width: 1400, height: 900 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    headless: true,
    launchOptions: {
      executablePath: chromium(),
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-sync',
        '--disable-component-update'
      ]
    }
  },
  webServer: {
    command: 'jupyter lab --config jupyter_server_test_config.py',
    url: `http://localhost:${port}/lab`,
    timeout: 120_000,
    reuseExistingServer: false,
    stdout: process.env.PRIME_UI_SERVER_LOG ? 'pipe' : 'ignore',
    stderr: 'pipe',
    env: { ...process.env, PRIME_UI_PORT: String(port) }
  }
});
