/** The messages between the server (pool.ts) and an extraction process (extract.worker.ts). */
import type { ErrorCode, FieldError } from '../../errors.ts';
import type { FileType } from '../detect.ts';
import type { Extracted, ExtractLimits } from './types.ts';

export interface ExtractJob {
  id: number;
  bytes: Uint8Array;
  fileName: string;
  limits: ExtractLimits;
}

export type ExtractReply =
  | { id: number; ok: true; type: FileType; extracted: Extracted }
  | {
      id: number;
      ok: false;
      error?: { code: ErrorCode; message: string; errors?: FieldError[]; extra?: Record<string, unknown>; headers?: Record<string, string> };
      /** A failure that was not the file's fault (a bug), or an allocation failure when outOfMemory. */
      message?: string;
      outOfMemory?: boolean;
    };
