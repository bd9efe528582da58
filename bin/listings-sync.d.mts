/** Types of bin/listings-sync.mjs (plain JavaScript, so that it parses on any Node). */
export declare const NODE_FLAGS: readonly string[];
export declare function missingFlags(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string[];
export declare function tooOldLine(
  version: string,
  engines: string | undefined,
): string | undefined;
export declare function refuseOldNode(): void;
export declare function ensureNodeFlags(
  script: string,
  args: readonly string[],
): Promise<never> | undefined;
