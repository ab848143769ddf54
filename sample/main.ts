import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '../lib/index.js';
import { AppModule } from './app.module.js';
import { INSTANCE } from './instance.js';
import { IN_MEMORY } from './redlock-nodes.js';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  // SIGINT/SIGTERM close the app: @Locked runs finish, held locks are released,
  // connections to the nodes are closed (RedlockModule.onApplicationShutdown).
  app.enableShutdownHooks();

  // Started by scripts/sample*.mjs (IPC channel): stop with the launcher even if it is killed.
  if (process.send) process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));

  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  const nodes = app.get(Redlock).nodeLabels; // host:port/db, never credentials
  const kind = IN_MEMORY ? 'in-memory node(s) of this process' : 'node(s)';
  new Logger('Sample').log(
    `Instance ${INSTANCE} (pid ${process.pid}) listening on http://localhost:${port}, locking on ${nodes.length} ${kind}: ${nodes.join(', ')}`,
  );
}

bootstrap().catch((error: unknown) => {
  new Logger('Sample').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
