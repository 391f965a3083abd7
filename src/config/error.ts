/** A setting that cannot be used: one line naming the variable, its value and what it allows. */
export class ConfigError extends Error {
  constructor(variable: string, allowed: string, value: string) {
    super(`Invalid ${variable}=${JSON.stringify(value)}: ${allowed}`);
    this.name = 'ConfigError';
  }
}
