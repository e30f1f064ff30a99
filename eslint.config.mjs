// @ts-check
import eslint from "@eslint/js";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // .cache/: the toolchain and npm caches, which GitLab keeps inside the project directory.
  { ignores: ["node_modules/", ".gen/", "cdktf.out/", "build/", "coverage/", ".gitlab-ci-local/", ".cache/"] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", module: "writable", process: "readonly", console: "readonly", __dirname: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["__tests__/**/*.ts"],
    // Synthesized Terraform JSON is untyped data; the tests read it as such.
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    rules: {
      // cdktf constructs are created for their side effect on the tree.
      "no-new": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", ignoreRestSiblings: true }],
    },
  },
  prettier,
);
