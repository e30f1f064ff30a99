/** Thrown for a bad parameter; its message is the single line a user sees. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
