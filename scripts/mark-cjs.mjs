// The package is "type": "module"; the CommonJS build needs its own marker so
// Node (and jest in a CommonJS app) loads dist/cjs/*.js as CommonJS.
import { writeFileSync } from 'node:fs';
writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n');
