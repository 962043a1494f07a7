/** Unit and component tests: jsdom, TypeScript through ts-jest, the console SDK mocked per test file. */
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/src'],
  testMatch: ['**/*.test.ts', '**/*.test.tsx'],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json', diagnostics: { warnOnly: false } }],
  },
  moduleFileExtensions: ['ts', 'tsx', 'js', 'json'],
  setupFilesAfterEnv: ['<rootDir>/src/setupTests.ts'],
  // PatternFly's styles are provided by the console; tests need none of them.
  moduleNameMapper: { '\\.css$': '<rootDir>/src/__mocks__/style.ts' },
  maxWorkers: 1,
};
