export { VssClient, type VssClientOptions, type UploadOptions } from './client.ts';
export { VssError, type FieldError, type ProblemBody } from './errors.ts';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
export { SERVER_BATCH_LIMITS, type BatchLimits } from './batches.ts';
export type { UploadSource } from './upload-source.ts';
export type * from './types/answers.ts';
export type * from './types/requests.ts';
