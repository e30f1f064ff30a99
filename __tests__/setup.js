// Registers cdktf's matchers (toHaveResourceWithProperties, ...) for every suite.
const { Testing } = require("cdktf");

Testing.setupJest();
