// Starts a TypeScript worker module when the process runs from source (tsx): Node 20 does not
// pass tsx's loader hooks on to a worker thread, so the worker registers tsx itself, then loads
// the module named last on its argv (see worker-url.ts). The bundle's workers are plain .mjs files
// and do not come here.
require('tsx/cjs/api').register();
require(process.argv[process.argv.length - 1]);
