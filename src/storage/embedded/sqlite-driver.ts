/**
 * better-sqlite3 in the major that runs on this Node, both installed (package.json). Major 12 is
 * built on V8's own addon API: built from source against Node 24.19's headers or later, it aborts
 * the process when a statement is collected (nodejs/node#65446). Major 13 is built on Node-API 10,
 * which Node 20 lacks: it crashes there. The two have the same API; this picks by the Node-API
 * version of the running process. Import the driver from here, its types from 'better-sqlite3'.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** The package this process loads: 13 where Node-API 10 is there (Node 22.14 and later), else 12. */
export const SQLITE_DRIVER = Number(process.versions.napi) >= 10 ? 'better-sqlite3-napi' : 'better-sqlite3';

export const Database = createRequire(import.meta.url)(SQLITE_DRIVER) as typeof BetterSqlite3;
