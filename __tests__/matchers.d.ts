// Types for the matchers __tests__/setup.js registers with Testing.setupJest().
import "cdktf/lib/testing/adapters/jest";
