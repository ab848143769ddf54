/** Name of this app instance in logs (`npm run sample:cluster` runs a, b and c). */
export const INSTANCE = process.env.SAMPLE_INSTANCE || 'default';
