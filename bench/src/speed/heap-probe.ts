// Preloaded into prompt-assembly by the speed bench only (`--expose-gc --import` this file, with
// HEAP_PROBE_FILE set): on SIGUSR2 it collects garbage fully and writes process.memoryUsage() to that
// file. RSS counts garbage not yet collected and pages the heap keeps after a collection, so one
// build on each of 1,000 sessions moved it between 2 and 143 MiB from run to run; what a collection
// leaves (heapUsed + external) is what the sessions hold. A service never loads this.
import { renameSync, writeFileSync } from "node:fs";

const file = process.env["HEAP_PROBE_FILE"];
const gc = (globalThis as { gc?: () => void }).gc;

if (file !== undefined && file !== "" && gc !== undefined) {
  process.on("SIGUSR2", () => {
    gc();
    // A second collection on the next turn takes what the first one's finalizers released.
    setImmediate(() => {
      gc();
      // Written whole and renamed, so a reader never sees half of it.
      writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
      renameSync(`${file}.tmp`, file);
    });
  });
}
