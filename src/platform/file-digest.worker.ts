// The digest thread of file-digest.ts: runs the tasks it is started with, at the lowest priority,
// and answers once with a digest or an error's message and code for each.
import { parentPort, workerData } from 'node:worker_threads';
import { runDigestTask, type DigestBlocks, type DigestTask } from './file-digest-task.ts';
import { lowerThisThreadPriority } from './thread-priority.ts';

export type DigestAnswer = ReturnType<typeof runDigestTask> | { message: string; code?: string };

const { tasks, blocks } = workerData as { tasks: DigestTask[]; blocks: DigestBlocks };
lowerThisThreadPriority();
parentPort!.postMessage(
  tasks.map((task): DigestAnswer => {
    try {
      return runDigestTask(task, blocks, true);
    } catch (e) {
      return { message: String((e as Error)?.message), code: (e as NodeJS.ErrnoException)?.code };
    }
  }),
);
