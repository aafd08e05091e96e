// The job queue, as the rest of the code uses it: queue.ts is what a module enqueues with and what
// a handler sees, worker.ts the worker that claims and runs jobs, queue-depth.ts the /metrics count.
export {
  backoffMs,
  enqueueJob,
  enqueueJobs,
  JobTakenOver,
  RetryJobAt,
  type EnqueueSpec,
  type Job,
  type JobCheckpoint,
  type JobCompletion,
  type JobHandler,
  type JobKindOptions,
  type WorkSource,
} from './queue.js';
export { DEFAULT_LEASE_MS, JobWorker, type JobWorkerOptions } from './worker.js';
export { jobQueueDepth } from './queue-depth.js';
