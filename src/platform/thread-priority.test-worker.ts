// Worker for thread-priority.test.ts: reports its nice value before and after lowering itself.
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { lowerThisThreadPriority } from './thread-priority.ts';

const nice = (): number => Number(fs.readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')[16]);
const before = nice();
lowerThisThreadPriority();
parentPort!.postMessage({ before, after: nice() });
