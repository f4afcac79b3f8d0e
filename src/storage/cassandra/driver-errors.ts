/**
 * Driver errors stop here: everything leaving the Cassandra backend is a ServiceError.
 *
 *   NoHostAvailable, client-side timeouts, Unavailable, Read/Write timeouts and failures,
 *   Overloaded, IsBootstrapping, server errors            -> storage_unavailable (503; retryable)
 *   "keyspace x does not exist"                            -> keyspace_not_found
 *   "table x does not exist" / "unconfigured table"        -> table_not_found
 *   AlreadyExists                                          -> already_exists
 *   anything else (syntax, invalid query, encoding)        -> internal (a bug here, not the caller's)
 *
 * The answer's text never carries the driver's: its messages name hosts, ports, statements and
 * the cluster's own wording, which are the operator's business, not a tenant's. The driver error
 * is kept as the `cause`, and the HTTP layer logs the cause of every 5xx in full.
 */
import cassandra from 'cassandra-driver';
import { ServiceError, isServiceError } from '../../errors.ts';

const { errors, types } = cassandra;
const codes = types.responseErrorCodes;

const UNAVAILABLE_CODES = new Set<number>([
  codes.serverError,
  codes.unavailableException,
  codes.overloaded,
  codes.isBootstrapping,
  codes.truncateError,
  codes.writeTimeout,
  codes.readTimeout,
  codes.readFailure,
  codes.writeFailure,
]);

export interface ErrorContext {
  keyspace?: string;
  table?: string;
  /** What was being done, for the message: "writing vectors", "searching"... */
  action?: string;
}

const where = (ctx: ErrorContext): string => (ctx.action ? ` while ${ctx.action}` : '');

/** The protocol's name of a response error code (`readTimeout`, `overloaded`...): a kind, no details. */
const codeName = (code: number): string => Object.entries(codes).find(([, c]) => c === code)?.[0] ?? `code ${code}`;

export function translateDriverError(err: unknown, ctx: ErrorContext = {}): ServiceError {
  if (isServiceError(err)) return err;
  const e = err as Error & { code?: number };

  if (err instanceof errors.NoHostAvailableError) {
    return new ServiceError('storage_unavailable', `Cassandra is unreachable${where(ctx)}.`, { cause: err });
  }
  if (err instanceof errors.OperationTimedOutError || err instanceof errors.BusyConnectionError) {
    return new ServiceError('storage_unavailable', `Cassandra did not answer in time${where(ctx)}.`, { cause: err });
  }
  if (err instanceof errors.ResponseError) {
    const code = e.code ?? -1;
    const msg = e.message ?? '';
    if (UNAVAILABLE_CODES.has(code)) {
      return new ServiceError('storage_unavailable', `Cassandra could not complete the request${where(ctx)} (${codeName(code)}).`, { cause: err });
    }
    if (code === codes.alreadyExists) {
      return new ServiceError('already_exists', `${ctx.table ? `Table "${ctx.table}"` : `Keyspace "${ctx.keyspace ?? '?'}"`} already exists.`, { cause: err });
    }
    if (code === codes.invalid || code === codes.configError) {
      if (/keyspace .* does not exist|Keyspace .* does not exist/i.test(msg)) {
        return new ServiceError('keyspace_not_found', `Keyspace "${ctx.keyspace ?? '?'}" does not exist.`, { cause: err });
      }
      if (/table .* does not exist|unconfigured table/i.test(msg)) {
        return new ServiceError('table_not_found', `Table "${ctx.table ?? '?'}" does not exist in keyspace "${ctx.keyspace ?? '?'}".`, { cause: err });
      }
    }
    return new ServiceError('internal', `Cassandra rejected a statement${where(ctx)}.`, { cause: err });
  }
  // Socket-level trouble surfaces as plain errors with these codes.
  const sys = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof sys === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(sys)) {
    return new ServiceError('storage_unavailable', `Cassandra connection failed${where(ctx)}: ${sys}.`, { cause: err });
  }
  return new ServiceError('internal', `Cassandra backend error${where(ctx)}.`, { cause: err });
}

/** True for errors worth retrying an idempotent statement on (timeouts and unavailability). */
export function isTransient(err: unknown): boolean {
  return isServiceError(err) ? err.code === 'storage_unavailable' : false;
}
