// The child side of emulator-process.ts: start one emulator in memory, report its endpoint, run.
import { startDynamo, startSqs } from "./emulators";

const emulator = process.argv[2] === "sqs" ? await startSqs() : await startDynamo();
process.send?.({ endpoint: emulator.endpoint });
process.on("SIGTERM", () => {
  void emulator.close().then(() => process.exit(0));
});
