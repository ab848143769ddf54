#!/usr/bin/env node
import { exitWhenWritten } from './cli/exit.js';
import { main } from './cli/main.js';

main(process.argv.slice(2), (line) => console.log(line)).then(exitWhenWritten, (error: Error) => {
  console.error(error.message);
  exitWhenWritten(1);
});
