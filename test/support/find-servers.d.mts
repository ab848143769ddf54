export declare class NoServerError extends Error {}

export interface FoundServers {
  readonly backend: 'local' | 'container';
  /** Path of the local binary, for the local backend. */
  readonly binary?: string;
  /** Something the user should know about the choice (a fallback). */
  readonly note?: string;
}

/** Whether a container engine answers (checked once per process, at most 3 s). */
export declare function containerRuntimeAvailable(): Promise<boolean>;

/** Where the tests' Redis servers come from; rejects with a one-line NoServerError when nowhere. */
export declare function findServers(env?: NodeJS.ProcessEnv): Promise<FoundServers>;
