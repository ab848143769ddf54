// The package's other entry points, type-checked under both resolutions (tsconfig.json and
// tsconfig.node10.json: the classic `node` resolution of Nest 10 and 11 starters, which reads
// no `exports` map, only `types` and `typesVersions`).
import { RedlockHealthIndicator } from 'nest-redlock/health';
import { createMemoryRedlock } from 'nest-redlock/testing';

export const entryPoints = { RedlockHealthIndicator, createMemoryRedlock };
