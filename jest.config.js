/**
 * Jest config: unit tests for the pure model logic of the lab extension.
 * Runs in node (no browser); UI is covered by the Playwright tests in ui-tests/.
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/labextension/test'],
  testRegex: '.*\\.spec\\.ts$',
  transform: {
    '^.+\\.tsx?$': [
      'ts-jest',
      { tsconfig: '<rootDir>/labextension/test/tsconfig.json' }
    ]
  },
  moduleFileExtensions: ['ts', 'tsx', 'js', 'json']
};
