// Browser tests of the Agents panel against a real jupyter_server + prime_kernel daemon.
// Uses the system Chromium (Debian package `chromium`); set PRIME_UI_CHROMIUM to another binary.
const { defineConfig } = require('@playwright/test');

const port = Number(process.env.PRIME_UI_PORT || 8877);

module.exports = defineConfig({
  testDir: './tests',
  timeout: 120_000,
  expect: { timeout: 30_000 },
  retries: process.env.CI ? 1 : 0,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://localhost:${port}`,
    viewport: { width: 1400, height: 900 },
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: process.env.PRIME_UI_CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox']
    }
  },
  webServer: {
    command: 'jupyter lab --config jupyter_server_test_config.py',
    url: `http://localhost:${port}/lab`,
    timeout: 120_000,
    reuseExistingServer: !process.env.CI,
    env: { ...process.env, PRIME_UI_PORT: String(port) }
  }
});
