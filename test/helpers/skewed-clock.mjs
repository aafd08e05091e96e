// Test only, never loaded by Corridor itself: makes the process it is preloaded into
// (NODE_OPTIONS=--import) read the time CORRIDOR_TEST_CLOCK_SKEW_MS ahead of the host's (behind
// when negative), as on a host whose clock drifted; a database on the host keeps the true time.
// Plain JavaScript: Node loads it before any TypeScript tooling.
const skewMs = Number(process.env.CORRIDOR_TEST_CLOCK_SKEW_MS ?? 0);
const RealDate = Date;
const hostNow = RealDate.now.bind(RealDate);

RealDate.now = () => hostNow() + skewMs;
globalThis.Date = new Proxy(RealDate, {
  // `new Date()` is now; a Date of a given time stays that time.
  construct: (target, args, newTarget) => Reflect.construct(target, args.length === 0 ? [hostNow() + skewMs] : args, newTarget),
  // `Date()` called as a function answers now as a string.
  apply: () => new RealDate(hostNow() + skewMs).toString(),
});
