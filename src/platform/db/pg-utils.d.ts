// pg's lib/utils.js has no type declarations of its own (described-once.ts uses its value conversion).
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
