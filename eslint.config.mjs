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
  // The layers (docs/architecture.md, Layers), lowest first: facts/ (plain facts), config/ (the
  // parameters and their rules), constructs/ (the stack), main.ts. A layer imports only those
  // below it; scripts/check-import-cycles.js keeps the files of one layer from importing in a circle.
  {
    files: ["facts/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["../*", "cdktf", "@cdktf/*", "constructs"],
              message:
                "facts/ is the lowest layer: it imports only other facts/ files, Node.js and plain libraries (docs/architecture.md, Layers).",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["config/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["constructs", "../.gen/*", "cdktf", "@cdktf/*", "../main", "../tools/*"],
              message:
                "config/ reads and checks parameters: it imports facts/ and Node.js, never constructs/, cdktf or the bindings (docs/architecture.md, Layers).",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["constructs/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["**/main"], message: "constructs/ is below main.ts: main.ts builds the stack (docs/architecture.md, Layers)." },
            {
              group: ["**/tools/**"],
              message:
                "constructs/ never imports tools/: the rehearsal's engine builds on the app, not the other way (docs/architecture.md, Layers).",
            },
          ],
        },
      ],
    },
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
