import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { exitWhenWritten } from '../../lib/cli/exit.js';

// The command line's exit: `nest-redlock list --json | jq` over a pipe, whose reader is slower than the CLI.
describe('the command line exits', () => {
  it('only once its output is handed to the pipe, not with part of it still queued', async () => {
    const reader = spawn('sh', ['-c', 'sleep 0.2; cat > /dev/null'], { stdio: ['pipe', 'ignore', 'ignore'] });
    const line = `${JSON.stringify({ resource: 'order:42', held: true, holder: '0123456789ab' })}\n`;
    for (let i = 0; i < 4000; i++) reader.stdin.write(line); // about 300 KiB, more than a pipe holds
    // What process.exit() right after printing would drop.
    expect(reader.stdin.writableLength).toBeGreaterThan(0);
    const queuedAtExit = await new Promise<number>((resolve) =>
      exitWhenWritten(0, [reader.stdin], () => resolve(reader.stdin.writableLength)),
    );
    expect(queuedAtExit).toBe(0);
    reader.stdin.end();
    await once(reader, 'exit');
  });
});
