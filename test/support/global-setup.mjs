// jest globalSetup (npm test, npm run test:faults): find the Redis servers before
// any test runs. Without any, stop here with one line saying what to install,
// instead of a failure per test.
import { findServers, NoServerError } from './find-servers.mjs';

export default async function globalSetup() {
  try {
    const found = await findServers();
    if (found.note) console.warn(found.note);
    if (found.backend === 'container') console.log('Redis for the tests: containers (no local redis-server)');
    // Jest workers start after this and inherit the choice instead of probing again.
    process.env.REDLOCK_TEST_CONTAINERS = found.backend === 'container' ? '1' : '0';
  } catch (error) {
    if (!(error instanceof NoServerError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}
