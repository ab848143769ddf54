/**
 * What the core offers the layers above it (lib/nest, lib/health, lib/testing,
 * the CLI) beyond its public API (`index.ts`): checks they apply at their own
 * boundary, the log-safe rendering of resources, and the scripts the testing
 * module mirrors. Not exported from the package.
 */
export { validateResources } from './keys.js';
export { checkAcquireOptions, checkKnown, checkTtl } from './options.js';
export { formatResources } from './log-safe.js';
export { describeKind } from './permit.js';
export {
  ACQUIRE,
  CONFIRM_TOKEN,
  EXTEND,
  FENCED_ACCESS,
  FORCE_RELEASE,
  INSPECT,
  LEAVE_QUEUE,
  RELEASE,
  SLOT_EXTEND,
  type Script,
} from './scripts.js';
export { PERMIT_ACQUIRE, PERMIT_CONFIRM, PERMIT_EXTEND, PERMIT_RELEASE } from './permit-scripts.js';
