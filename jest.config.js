/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/__tests__"],
  testMatch: ["**/*.test.ts"],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only; `tsc --noEmit` type-checks.
    "^.+\\.ts$": "ts-jest",
  },
  setupFilesAfterEnv: ["<rootDir>/__tests__/setup.js", "<rootDir>/scripts/test/jest-timing-setup.js"],
  // Each suite's wall and CPU time for npm test's time report (scripts/test/cpu-meter.js).
  reporters: ["default", "<rootDir>/scripts/test/jest-timing-reporter.js"],
  testSequencer: "<rootDir>/scripts/test/jest-sequencer.js",
  testTimeout: 120000,
};
