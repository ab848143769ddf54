#!/usr/bin/env node
import { main } from './cli/main.js';

main(process.argv.slice(2), (line) => console.log(line)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.message);
    process.exit(1);
  },
);
