/**
 * Jest config: unit tests of the lab extension's pure logic (in node) and of its DOM renderers
 * (in jsdom, files marked `@jest-environment jsdom`). The UI in a browser is covered by the
 * Playwright tests in ui-tests/.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/labextension/test'],
  testRegex: '.*\\.spec\\.ts$',
  setupFiles: ['<rootDir>/labextension/test/jsdom-setup.js'],
  transform: {
    '^.+\\.tsx?$': [
      'ts-jest',
      { tsconfig: '<rootDir>/labextension/test/tsconfig.json' }
    ]
  },
  moduleFileExtensions: ['ts', 'tsx', 'js', 'json']
};
