import type { ForceReleaseResult } from '../core/index.js';
import { holderName } from './holders.js';
import type { CommandRun } from './main.js';

/** `nest-redlock release --force <resource> [--holder <fingerprint>]`: 3 when another holder has it (nothing released). */
export async function releaseCommand({ args, values, redlock, print }: CommandRun): Promise<number> {
  const result = await redlock.forceRelease(args[0]!, { holder: values.holder });
  print(values.json ? JSON.stringify(result, null, 2) : renderRelease(result, values.holder));
  return result.releasedOn === 0 && result.otherHolderOn > 0 ? 3 : 0;
}

function renderRelease(r: ForceReleaseResult, wanted: string | undefined): string {
  const name = JSON.stringify(r.resource);
  const what =
    r.releasedOn > 0
      ? `${name} ${permitOf(r)}force-released${holderName(r)} (holder ${r.holder}) on ${r.releasedOn}/${r.nodes.length} nodes`
      : r.otherHolderOn > 0
        ? `${name} is held by ${wanted ? `another holder than ${wanted}` : 'several holders'} on ${r.otherHolderOn} nodes: nothing released`
        : `${name} was not held: nothing released`;
  const token =
    r.fencingToken === undefined
      ? ''
      : `\nfencing counter raised to ${r.fencingToken}: fenced stores refuse the evicted holder once they see this token or the next holder's`;
  return what + token;
}

/** Which permit went: `write permit `, `semaphore permit `; nothing for a mutex. */
function permitOf(r: ForceReleaseResult): string {
  if (r.kind === 'rw') return `${r.mode ?? ''} permit `.trimStart();
  return r.kind === 'semaphore' ? 'semaphore permit ' : '';
}
